"""graphcheck.workers: long-lived child processes that import case modules and run cases.

A case module is user code: importing it, or running one of its cases, may call
``sys.exit``/``os._exit``, raise ``KeyboardInterrupt``, segfault, hang or exhaust
memory. None of that may end or stall the run that checks it, so ``audit``,
``ci`` and ``pytest --graphcheck`` import and run cases in workers:

- ``child``: the worker's main loop (``python -m graphcheck.workers.child``),
  one task at a time over a pipe, several cases per worker, modules kept
  imported between the cases of one module.
- ``pool``: the parent side. A worker that dies or runs past its deadline is
  killed (its whole process group) and replaced; only the task it was running
  is charged (GC004 for an import, GC006 for a crash, GC007 for a timeout).
- ``run``: the audit driver on top of the pool (discover every source, run
  every case, keep the declared order).

On a GPU host each worker owns one GPU slot (``CUDA_VISIBLE_DEVICES``), several
slots per GPU; they share Triton's on-disk compile cache.
"""
