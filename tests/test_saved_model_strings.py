"""A SavedModel whose signature takes and returns strings (serving-time text preprocessing):
string constants are stored without pickling and round-trip exactly; numbers vs numpy."""

from __future__ import annotations

import numpy as np

import ipu_gpu as tf

CONSTANTS = ["x", "", "é\x00", "tail\x00"]  # trailing NULs and empty strings survive


class _Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(2.0)

    @tf.function(input_signature=[tf.TensorSpec([4], tf.string)])
    def serve(self, text):
        return {"scaled": tf.strings.to_number(text) * self.w,
                "joined": tf.strings.join([text, tf.constant(CONSTANTS)], separator="|"),
                "upper": tf.strings.upper(text),
                "bucket": tf.strings.to_hash_bucket_fast(text, 7)}


def test_string_signature_round_trips(tmp_path):
    model = _Model()
    tf.saved_model.save(model, str(tmp_path), signatures={"serving_default": model.serve})
    loaded = tf.saved_model.load(str(tmp_path))
    text = ["1.5", "-2", "3e2", "0"]
    out = loaded.signatures["serving_default"](text=tf.constant(text))
    np.testing.assert_array_equal(out["scaled"].numpy(), np.array([3.0, -4.0, 600.0, 0.0],
                                                                  np.float32))
    expected = np.array([f"{t}|{c}".encode() for t, c in zip(text, CONSTANTS)], object)
    np.testing.assert_array_equal(out["joined"].numpy(), expected)
    np.testing.assert_array_equal(out["upper"].numpy(), np.array([t.upper().encode()
                                                                 for t in text], object))
    np.testing.assert_array_equal(out["bucket"].numpy(),
                                  model.serve(tf.constant(text))["bucket"].numpy())
    again = loaded.serve(tf.constant(["1", "2", "3", "4"]))
    np.testing.assert_array_equal(again["scaled"].numpy(), [2.0, 4.0, 6.0, 8.0])
