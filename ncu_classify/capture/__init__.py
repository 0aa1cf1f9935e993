"""shapes file -> capture folder (reports + manifest.json): which shapes run where with which
ncu command line (plan, ncu_cmd), the host (host), one ncu process per batch (ncu), the
batch/status protocol with the replay target (protocol, replay: torch), the manifest
(manifest) and the run that ties them (run). Reads its own reports through read/.
"""

from __future__ import annotations

from ..core.lazy import lazy_face

__all__ = [
    "CaptureOptions",
    "Manifest",
    "ShapesFile",
    "capture",
    "check_capture",
    "load_shapes",
    "plan_capture",
    "read_manifest",
]
__getattr__ = lazy_face(
    __name__,
    {
        "CaptureOptions": "plan",
        "Manifest": "manifest",
        "ShapesFile": "shapes",
        "capture": "run",
        "check_capture": "plan",
        "load_shapes": "shapes",
        "plan_capture": "plan",
        "read_manifest": "manifest",
    },
)
