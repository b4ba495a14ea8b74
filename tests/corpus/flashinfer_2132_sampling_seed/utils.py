"""The registrar of the flashinfer_2132 reproduction: like flashinfer's utils.register_custom_op, a thin
wrapper over torch.library.custom_op."""

import torch


def register_custom_op(name, fn=None, mutates_args=()):
    def wrap(f):
        return torch.library.custom_op(name, mutates_args=mutates_args)(f)

    return wrap(fn) if fn is not None else wrap
