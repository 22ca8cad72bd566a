"""A griffe extension for the API reference: cunumpy's docstrings use reST roles
(``:func:`name```, ``:class:`~mod.Name```) that Markdown would print as they are; this keeps
the name as inline code."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|data|mod|exc|obj|const):`~?([^`]+)`")


class PlainRoles(griffe.Extension):
    """Rewrites ``:role:`target``` to `` `target` `` in every docstring."""

    def on_object(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(r"`\1`", obj.docstring.value)
