"""An orbit camera: a target point, a distance, two angles; perspective projection.

Pure numpy, so it is tested without a GL context. Matrices are row-major numpy arrays that act on
column vectors; ``gl_bytes`` turns one into the column-major bytes GLSL expects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


def gl_bytes(matrix: np.ndarray) -> bytes:
    return np.ascontiguousarray(matrix.T, dtype=np.float32).tobytes()


@dataclass
class Camera:
    """Looks at ``target`` from ``distance`` away; ``yaw`` turns about the z axis and ``pitch``
    tilts towards it (radians). ``fov_y`` is the vertical field of view (radians)."""

    target: np.ndarray = field(default_factory=lambda: np.zeros(3))
    distance: float = 5.0
    yaw: float = 0.6
    pitch: float = 0.5
    fov_y: float = math.radians(45.0)

    ORBIT_RADIANS_PER_PIXEL = 0.006
    ZOOM_PER_STEP = 0.9

    @property
    def eye(self) -> np.ndarray:
        cos_pitch = math.cos(self.pitch)
        direction = np.array([cos_pitch * math.cos(self.yaw), cos_pitch * math.sin(self.yaw),
                              math.sin(self.pitch)])
        return self.target + self.distance * direction

    def view(self) -> np.ndarray:
        eye = self.eye
        forward = self.target - eye
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        matrix = np.identity(4)
        matrix[0, :3], matrix[1, :3], matrix[2, :3] = right, up, -forward
        matrix[:3, 3] = -matrix[:3, :3] @ eye
        return matrix

    def projection(self, aspect: float) -> np.ndarray:
        near, far = self.distance * 1e-3, self.distance * 1e3
        f = 1.0 / math.tan(self.fov_y / 2.0)
        matrix = np.zeros((4, 4))
        matrix[0, 0], matrix[1, 1] = f / aspect, f
        matrix[2, 2] = (far + near) / (near - far)
        matrix[2, 3] = 2.0 * far * near / (near - far)
        matrix[3, 2] = -1.0
        return matrix

    def view_projection(self, aspect: float, *, shift_x: float = 0.0) -> np.ndarray:
        """Projection times view; ``shift_x`` moves the image right by that many half-widths
        (keeps the scene centred in the part of the window a side panel leaves free)."""
        shift = np.identity(4)
        shift[0, 3] = shift_x
        return shift @ self.projection(aspect) @ self.view()

    def orbit(self, dx: float, dy: float) -> None:
        """Turn by a mouse drag of (dx, dy) window pixels."""
        self.yaw -= dx * self.ORBIT_RADIANS_PER_PIXEL
        limit = math.radians(89.0)
        self.pitch = min(limit, max(-limit, self.pitch - dy * self.ORBIT_RADIANS_PER_PIXEL))

    def pan(self, dx: float, dy: float, viewport_height: float) -> None:
        """Slide the target so the scene follows a drag of (dx, dy) window pixels."""
        view = self.view()
        right, up = view[0, :3], view[1, :3]
        units_per_pixel = 2.0 * self.distance * math.tan(self.fov_y / 2.0) / max(viewport_height, 1)
        self.target = self.target - (dx * right + dy * up) * units_per_pixel

    def zoom(self, steps: float) -> None:
        """Move closer (positive steps, one per wheel notch) or further away."""
        self.distance = float(np.clip(self.distance * self.ZOOM_PER_STEP ** steps, 1e-4, 1e6))

    def fit(self, positions: np.ndarray, *, fraction: float = 0.9) -> None:
        """Aim at the median particle and step back until ``fraction`` of them fit the view."""
        sample = np.asarray(positions[:: max(1, len(positions) // 20000)], dtype=np.float64)
        sample = sample[np.isfinite(sample).all(axis=1)]
        if len(sample) == 0:
            return
        self.target = np.median(sample, axis=0)
        radius = float(np.quantile(np.linalg.norm(sample - self.target, axis=1), fraction))
        radius = max(radius, 1e-3)
        self.distance = 1.1 * radius / math.sin(self.fov_y / 2.0)
