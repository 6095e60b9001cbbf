"""ipu_gpu.errors against tf.errors: every public name exists, the codes are TF's, the classes
are made either as ``Error(message)`` or as TF's ``Error(node_def, op, message)``, and each
carries its canonical ``error_code``."""

from __future__ import annotations

import pickle

import pytest

from ipu_gpu import errors
from ipu_gpu.io import gfile

CLASSES = ["AbortedError", "AlreadyExistsError", "CancelledError", "DataLossError",
           "DeadlineExceededError", "FailedPreconditionError", "InternalError",
           "InvalidArgumentError", "NotFoundError", "OutOfRangeError", "PermissionDeniedError",
           "ResourceExhaustedError", "UnauthenticatedError", "UnavailableError",
           "UnimplementedError", "UnknownError"]


def test_every_tf_errors_name_exists_with_tf_codes(real_tf):
    public = [n for n in dir(real_tf.errors) if not n.startswith("_")]
    missing = [n for n in public if not hasattr(errors, n)]
    assert missing == []
    for name in public:
        if name.isupper():
            assert getattr(errors, name) == getattr(real_tf.errors, name), name


@pytest.mark.parametrize("name", CLASSES)
def test_error_classes_match_tf(real_tf, name):
    ours, theirs = getattr(errors, name), getattr(real_tf.errors, name)
    assert issubclass(ours, errors.OpError)
    made = theirs(None, None, "went wrong")
    for e in (ours("went wrong"), ours(None, None, "went wrong")):
        assert str(e) == "went wrong" and e.message == "went wrong"
        assert e.error_code == made.error_code
        assert e.node_def is None and e.op is None
        copy = pickle.loads(pickle.dumps(e))
        assert type(copy) is ours and copy.message == "went wrong"


def test_op_error_takes_an_error_code_and_operator_error_is_a_type_error(real_tf):
    assert errors.OpError(None, None, "m", errors.UNIMPLEMENTED).error_code == 12
    assert real_tf.errors.OpError(None, None, "m", 12).error_code == 12
    assert issubclass(errors.OperatorNotAllowedInGraphError, TypeError)
    assert issubclass(real_tf.errors.OperatorNotAllowedInGraphError, TypeError)


def test_invalid_argument_is_also_a_value_error():
    assert issubclass(errors.InvalidArgumentError, ValueError)


@pytest.mark.parametrize("fn", [gfile.rename, gfile.copy])
def test_gfile_refuses_an_existing_destination_with_already_exists(tmp_path, fn):
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_text("1")
    dst.write_text("2")
    with pytest.raises(errors.AlreadyExistsError, match="File exists"):
        fn(str(src), str(dst))
    fn(str(src), str(dst), overwrite=True)
    assert dst.read_text() == "1"
