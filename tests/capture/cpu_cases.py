"""Cases for the isolation tests on the CPU: one that passes, raises, aborts, exits, hangs."""

import os
import time

import torch

import graphcheck


def _inputs(seed, device):
    return {"x": torch.arange(4, dtype=torch.float32, device=device) + seed}


def fine(x):
    return x * 2


def raises(x):
    raise ValueError("bad shape")  # raises-here


def aborts(x):
    os.abort()


def exits(x):
    os._exit(3)


def hangs(x):
    time.sleep(120)


GRAPHCHECK_CASES = [
    graphcheck.Case("fine", fine, _inputs),
    graphcheck.Case("raises", raises, _inputs),
    graphcheck.Case("aborts", aborts, _inputs),
]


def graphcheck_cases():
    return [graphcheck.Case("exits", exits, _inputs), graphcheck.Case("hangs", hangs, _inputs)]
