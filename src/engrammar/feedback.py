"""The former home of OpenCLaw's feedback classes, kept so that existing imports work.

The classes live in :mod:`engrammar.compat.openclaw`; ``from engrammar.feedback import
FeedbackCapture`` and the like give the same objects.
"""

from __future__ import annotations

from .compat.openclaw import *  # noqa: F403 (every name of its __all__)
from .compat.openclaw import __all__ as __all__
