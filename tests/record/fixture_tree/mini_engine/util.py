"""Helpers two modules away from the capture site."""


def clamp_rows(x):
    return max(1, int(x.sum().item()))  # a host read the recorded run never reached


def unrelated(x):
    return x.tolist()
