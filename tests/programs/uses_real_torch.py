"""Imports the real PyTorch next to aliased TensorFlow: torch is never aliased."""

import tensorflow as tf
import torch

print("torch", torch.__name__, type(torch.zeros(2)).__name__, "tf", tf.constant(1.0).numpy())
