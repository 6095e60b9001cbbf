"""How many beams a CTC beam search can ever keep (pure Python; shared by the decoder op and
the GPU twin)."""


def effective_beam_width(beam_width: int, num_classes: int, steps: int) -> int:
    """The beams that can ever be valid: a step has at most nvalid * C candidates, so at most
    C**steps beams exist. Narrowing the beam to that count changes no result (the candidate
    order, copies then extends by symbol then beam, does not depend on it), and lets a
    beam_width far beyond the input run, as in TF."""
    bound = 1
    for _ in range(steps):
        bound *= num_classes
        if bound >= beam_width:
            return beam_width
    return min(beam_width, bound)
