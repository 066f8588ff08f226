"""The particle renderer: scene (what is drawn), styles (how it looks) and passes (how it is
drawn: GL point sprites, the compute splat where the positions are on a compute device, or the
host splat where GL is software),
joined by :class:`Renderer`. Needs moderngl; nothing here opens a window."""

from ._camera import Camera, gl_bytes
from ._camera_path import CameraKey, CameraPath
from ._colormaps import colour_map, colour_maps
from ._density_pass import DensityPass, default_smoothing
from ._detail import (DEFAULT_MAX_DRAWN, DrawnStretch, LevelOfDetail, drawn_sentence,
                      represented_count, sample_labels, sample_masses)
from ._exposure import auto_exposure, ease_exposure
from ._host_splat_pass import HostSplatPass
from ._gl_calls import FramesInFlight
from ._pacing import POLL_S, DrawPacing, next_tick
from ._context import GLContextError, describe, headless_context
from ._particle_pass import BarePointPass, ParticlePass
from ._renderer import DEFAULT_TARGET_FORMAT, TARGET_FORMATS, Renderer
from ._scene import DeviceParticles, HostParticles, ParticleScene
from ._splat_pass import SplatPass
from ._style import (COLOUR_MODES, DENSITY_QUANTITIES, PALETTE_SIZE, DensityStyle, PointStyle,
                     ToneMap, population_weights)
from ._tonemap_pass import ToneMapPass

__all__ = [
    "BarePointPass", "COLOUR_MODES", "Camera", "CameraKey", "CameraPath", "DEFAULT_MAX_DRAWN",
    "DEFAULT_TARGET_FORMAT", "DrawnStretch", "LevelOfDetail", "drawn_sentence",
    "represented_count", "sample_labels", "sample_masses",
    "DENSITY_QUANTITIES", "DensityPass", "DensityStyle", "DeviceParticles", "DrawPacing",
    "FramesInFlight", "GLContextError", "POLL_S", "next_tick",
    "HostParticles", "HostSplatPass",
    "SplatPass", "PALETTE_SIZE", "auto_exposure", "colour_map",
    "colour_maps", "default_smoothing",
    "ParticlePass",
    "ParticleScene", "PointStyle", "Renderer", "TARGET_FORMATS", "ToneMap", "ToneMapPass",
    "describe", "ease_exposure", "gl_bytes", "headless_context", "population_weights",
]
