"""The batch of an eager step, read from the program's stack while a probe is open.

When a program stops launching its graphs and runs on eagerly, which batch sizes it runs is
what tells a user why (a batch past the largest graph, as SGLang and vLLM fall back). No hook
is installed for it: a global module hook would put every module call on torch's slow path
and change what torch.compile guards on. Instead the recorder's thread looks at the other
threads' stacks (``sys._current_frames``) a few times during each probe: the outermost frame
running an ``nn.Module``'s ``forward`` is the step, and dim 0 of its first tensor argument
is the batch, as a graph's batch is dim 0 of its first input (``sites.batch_of``). A thread
waiting outside the model (a synchronize between steps) gives no sample.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from types import FrameType
from typing import Any

#: Frames walked outward from a thread's innermost one, at most.
_DEPTH = 200


def step_batch(frame: FrameType | None, module_type: type) -> int | None:
    """Dim 0 of the first tensor argument of the outermost ``forward`` of an ``nn.Module``
    on the stack that ends in ``frame``; None where no module's forward runs."""
    outermost: FrameType | None = None
    for _ in range(_DEPTH):
        if frame is None:
            break
        code = frame.f_code
        if code.co_name == "forward" and code.co_argcount:
            owner = frame.f_locals.get(code.co_varnames[0])
            # type(), not isinstance(): isinstance asks the object for __class__, which a
            # proxy answers (a dead weakref.proxy raises)
            if issubclass(type(owner), module_type):
                outermost = frame
        frame = frame.f_back
    if outermost is None:
        return None
    code = outermost.f_code
    local = outermost.f_locals
    for name in code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]:
        shape = getattr(local.get(name), "shape", None)
        if shape is not None and hasattr(local.get(name), "dtype") and len(shape):
            return int(shape[0])
    return None


def sample(counts: Counter[int], module_type: type) -> None:
    """Add the batch each other thread is stepping now, where one is. A stack that cannot be
    read (a frame torn down mid-look, a shape that is no number) gives no sample: it never
    stops the recording."""
    me = threading.get_ident()
    for thread, frame in sys._current_frames().items():
        if thread == me:
            continue
        try:
            batch = step_batch(frame, module_type)
        except Exception:
            continue
        if batch is not None and batch > 0:
            counts[batch] += 1


def module_type_of(torch: Any) -> type | None:
    nn = getattr(torch, "nn", None)
    return getattr(nn, "Module", None)
