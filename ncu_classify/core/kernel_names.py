"""A kernel's base name: the function's own name without `void `, namespaces, template
arguments and parameters, so that the forms torch.profiler and ncu give one kernel compare
(`elementwise_kernel<128, 4, ...>(int, ...)` against `elementwise_kernel<(int)128, ...>`,
`(anonymous namespace)` against `<unnamed>`). Record names the kernels of its uncovered work
by it; cards.kernel_names compares a program's kernels with its replay's."""

from __future__ import annotations

ANONYMOUS = ("(anonymous namespace)::", "<unnamed>::")


def base_name(name: str) -> str:
    """A kernel's name as both torch.profiler and ncu give it: `void `, namespaces, template
    arguments and the parameter list dropped (`void at::native::elementwise_kernel<128, 4,
    ...>(int, ...)` -> `elementwise_kernel`; `triton_poi_fused_add_7` as it is)."""
    text = plain_name(name)
    cut = min((i for i in (text.find("<"), text.find("(")) if i >= 0), default=len(text))
    return text[:cut].strip().rsplit("::", 1)[-1]


def plain_name(name: str) -> str:
    """The name without `void ` and anonymous namespaces."""
    text = name.strip().removeprefix("void ")
    for anonymous in ANONYMOUS:
        text = text.replace(anonymous, "")
    return text
