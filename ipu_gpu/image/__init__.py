"""``tf.image``: the image ops input pipelines use (``ops.py``), JPEG decoding (``jpeg.py``)
and the per-axis resize weights of every ``tf.image.resize`` method (``resize_weights.py``)."""

from .ops import (ResizeMethod, adjust_brightness, adjust_contrast, central_crop,
                  convert_image_dtype, crop_to_bounding_box, flip_left_right, flip_up_down,
                  grayscale_to_rgb, pad_to_bounding_box, per_image_standardization,
                  random_brightness, random_contrast, random_crop, random_flip_left_right,
                  random_flip_up_down, resize, resize_with_crop_or_pad, rgb_to_grayscale, rot90,
                  transpose)

from .color import (adjust_gamma, adjust_hue, adjust_saturation, hsv_to_rgb, random_hue,
                    random_saturation, rgb_to_hsv)

from .jpeg import decode_and_crop_jpeg, decode_jpeg, extract_jpeg_shape

resize_image_with_crop_or_pad = resize_with_crop_or_pad  # TF 1's name

__all__ = [
    "ResizeMethod", "adjust_brightness", "adjust_gamma", "adjust_hue", "adjust_saturation",
    "hsv_to_rgb", "random_hue", "random_saturation", "rgb_to_hsv", "adjust_contrast",
    "central_crop",
    "convert_image_dtype", "crop_to_bounding_box", "flip_left_right", "flip_up_down",
    "grayscale_to_rgb", "pad_to_bounding_box", "per_image_standardization", "random_brightness",
    "random_contrast", "random_crop", "random_flip_left_right", "random_flip_up_down", "resize",
    "resize_image_with_crop_or_pad", "resize_with_crop_or_pad", "rgb_to_grayscale", "rot90",
    "transpose", "decode_and_crop_jpeg", "decode_jpeg", "extract_jpeg_shape",
]
