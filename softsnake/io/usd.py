"""USD animation export (usd-core / ``pxr``): deforming soft meshes and rigid parts as time samples on one stage.

Layout of the written stage (default prim ``/World``)::

    /World/<soft name>        UsdGeom.Mesh, points and extent sampled per frame [m]
    /World/<rigid name>       UsdGeom.Xform with xformOp:translate [m] and xformOp:orient (quaternion) sampled per frame
    /World/<rigid name>/geom  UsdGeom.Cube (scaled to the half extents) or UsdGeom.Cylinder

Time codes are frames: ``time_code = time_s * fps``, with ``timeCodesPerSecond = framesPerSecond = fps``. The stage is
built in memory and written once, atomically, by ``close()``; leaving a ``with`` block through an exception writes
nothing, so an interrupted run never leaves a partial file that looks complete.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from softsnake.geometry.surface import surface_triangles
from softsnake.io.files import atomic_path

__all__ = ["UsdAnimationWriter", "surface_triangles"]

_SUFFIXES = (".usda", ".usdc", ".usd")


def _pxr():
    try:
        from pxr import Gf, Sdf, Usd, UsdGeom, Vt
    except ImportError as e:  # pragma: no cover - usd-core is a declared dependency
        raise ImportError("USD export needs usd-core: pip install usd-core") from e
    return Gf, Sdf, Usd, UsdGeom, Vt


class UsdAnimationWriter:
    """Collect animation frames of soft meshes and rigid parts and save them as one USD file.

    path: output file ending in .usda (text), .usdc (binary crate) or .usd
    fps: frames per second of the time codes [1/s]
    up_axis: "Y" or "Z" (the engine uses Z-up)
    meters_per_unit: stage length unit [m per unit]; positions are written as given (in metres for 1.0)
    """

    def __init__(self, path, fps: float, *, up_axis: str = "Z", meters_per_unit: float = 1.0):
        Gf, Sdf, Usd, UsdGeom, Vt = _pxr()
        self.path = Path(path)
        if self.path.suffix.lower() not in _SUFFIXES:
            raise ValueError(f"UsdAnimationWriter: path {str(self.path)!r} must end in one of {', '.join(_SUFFIXES)}")
        if not (isinstance(fps, (int, float, np.floating, np.integer)) and math.isfinite(fps) and fps > 0):
            raise ValueError(f"UsdAnimationWriter: fps must be a positive finite number, got {fps!r}")
        if up_axis not in ("Y", "Z"):
            raise ValueError(f"UsdAnimationWriter: up_axis must be 'Y' or 'Z', got {up_axis!r}")
        if not (math.isfinite(meters_per_unit) and meters_per_unit > 0):
            raise ValueError(
                f"UsdAnimationWriter: meters_per_unit must be positive and finite, got {meters_per_unit!r}"
            )
        self.fps = float(fps)
        self.stage = Usd.Stage.CreateInMemory()
        UsdGeom.SetStageUpAxis(self.stage, UsdGeom.Tokens.y if up_axis == "Y" else UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(self.stage, float(meters_per_unit))
        self.stage.SetTimeCodesPerSecond(self.fps)
        self.stage.SetFramesPerSecond(self.fps)
        root = UsdGeom.Xform.Define(self.stage, "/World")
        self.stage.SetDefaultPrim(root.GetPrim())
        self._meshes: dict[str, tuple] = {}  # name -> (UsdGeom.Mesh, max vertex index used by the faces)
        self._rigids: dict[str, tuple] = {}  # name -> (translate op, orient op)
        self._times: list[float] = []
        self._closed = False

    # -- declarations ----------------------------------------------------------------------------------------------
    def _new_prim_path(self, name: str) -> str:
        _, Sdf, _, _, _ = _pxr()
        if self._closed:
            raise ValueError("UsdAnimationWriter: the writer is closed")
        if not isinstance(name, str) or not Sdf.Path.IsValidIdentifier(name):
            raise ValueError(f"UsdAnimationWriter: {name!r} is not a valid USD prim name (letters, digits, '_')")
        if name in self._meshes or name in self._rigids:
            raise ValueError(f"UsdAnimationWriter: a part named {name!r} already exists")
        return f"/World/{name}"

    def add_soft_mesh(self, name: str, surface_triangles) -> None:
        """Declare a deforming triangle mesh; ``surface_triangles`` (m, 3) index the points given to write_frame."""
        _, _, _, UsdGeom, Vt = _pxr()
        prim_path = self._new_prim_path(name)
        tri = np.asarray(surface_triangles)
        if tri.ndim != 2 or tri.shape[1] != 3 or tri.shape[0] == 0 or not np.issubdtype(tri.dtype, np.integer):
            raise ValueError(
                f"add_soft_mesh({name!r}): surface_triangles must be a non-empty (m, 3) integer array, got "
                f"{tri.shape} {tri.dtype}"
            )
        if (tri < 0).any():
            raise ValueError(f"add_soft_mesh({name!r}): negative vertex index in surface_triangles")
        mesh = UsdGeom.Mesh.Define(self.stage, prim_path)
        mesh.CreateFaceVertexCountsAttr(Vt.IntArray([3] * tri.shape[0]))
        mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(tri.astype(np.int32).reshape(-1)))
        mesh.CreateOrientationAttr(UsdGeom.Tokens.rightHanded)  # triangles are wound outward (counter-clockwise)
        mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
        mesh.CreatePointsAttr()
        mesh.CreateExtentAttr()
        self._meshes[name] = (mesh, int(tri.max()))

    def _add_rigid(self, name: str, make_geom) -> None:
        _, _, _, UsdGeom, _ = _pxr()
        prim_path = self._new_prim_path(name)
        xform = UsdGeom.Xform.Define(self.stage, prim_path)
        translate = xform.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble)
        orient = xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble)
        make_geom(prim_path + "/geom")
        self._rigids[name] = (translate, orient)

    def add_box(self, name: str, half_extents) -> None:
        """Declare a rigid box with half extents (hx, hy, hz) [m] in its body frame."""
        Gf, _, _, UsdGeom, _ = _pxr()
        he = np.asarray(half_extents, dtype=np.float64)
        if he.shape != (3,) or not np.all(np.isfinite(he)) or np.any(he <= 0):
            raise ValueError(
                f"add_box({name!r}): half_extents must be 3 positive finite lengths [m], got {half_extents!r}"
            )

        def geom(path):
            cube = UsdGeom.Cube.Define(self.stage, path)
            cube.CreateSizeAttr(2.0)  # spans [-1, 1]^3 before scaling
            cube.CreateExtentAttr([(-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)])
            cube.AddScaleOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*he.tolist()))

        self._add_rigid(name, geom)

    def add_cylinder(self, name: str, radius: float, half_height: float, axis: str = "Z") -> None:
        """Declare a rigid cylinder of ``radius`` [m] and length 2 * ``half_height`` [m] along body ``axis``."""
        _, _, _, UsdGeom, _ = _pxr()
        for label, v in (("radius", radius), ("half_height", half_height)):
            if not (isinstance(v, (int, float, np.floating, np.integer)) and math.isfinite(v) and v > 0):
                raise ValueError(f"add_cylinder({name!r}): {label} must be a positive finite length [m], got {v!r}")
        if axis not in ("X", "Y", "Z"):
            raise ValueError(f"add_cylinder({name!r}): axis must be 'X', 'Y' or 'Z', got {axis!r}")

        def geom(path):
            cyl = UsdGeom.Cylinder.Define(self.stage, path)
            cyl.CreateRadiusAttr(float(radius))
            cyl.CreateHeightAttr(2.0 * float(half_height))
            cyl.CreateAxisAttr(axis)
            r, h = float(radius), float(half_height)
            lo = {"X": (-h, -r, -r), "Y": (-r, -h, -r), "Z": (-r, -r, -h)}[axis]
            cyl.CreateExtentAttr([lo, tuple(-c for c in lo)])

        self._add_rigid(name, geom)

    # -- frames ----------------------------------------------------------------------------------------------------
    def time_code(self, time_s: float) -> float:
        """Time code of simulation time ``time_s`` [s]."""
        return float(time_s) * self.fps

    def write_frame(self, time_s: float, soft_points: dict | None = None, rigid_poses: dict | None = None) -> None:
        """Record one frame at ``time_s`` [s].

        soft_points: {mesh name: (n, 3) positions [m]}; n must cover every vertex index of the mesh's triangles.
        rigid_poses: {part name: (position (3,) [m], quaternion (4,) as x, y, z, w)}; quaternions are normalised.
        Parts left out of a frame keep their previous samples (USD holds/interpolates between samples).
        """
        Gf, _, _, _, Vt = _pxr()
        if self._closed:
            raise ValueError("UsdAnimationWriter: the writer is closed")
        if not math.isfinite(float(time_s)):
            raise ValueError(f"write_frame: time {time_s!r} s is not finite")
        code = self.time_code(time_s)
        soft_points = soft_points or {}
        rigid_poses = rigid_poses or {}
        # Validate everything first so a bad frame adds no samples at all.
        staged_points = {}
        for name, pts in soft_points.items():
            if name not in self._meshes:
                raise ValueError(f"write_frame: unknown soft mesh {name!r} (declared: {sorted(self._meshes)})")
            p = np.asarray(pts, dtype=np.float64)
            if p.ndim != 2 or p.shape[1] != 3:
                raise ValueError(f"write_frame: points of {name!r} must have shape (n, 3), got {p.shape}")
            if p.shape[0] <= self._meshes[name][1]:
                raise ValueError(
                    f"write_frame: {name!r} has {p.shape[0]} points but its triangles use index {self._meshes[name][1]}"
                )
            if not np.all(np.isfinite(p)):
                k = int(np.argwhere(~np.isfinite(p).all(axis=1))[0, 0])
                raise ValueError(f"write_frame: point {k} of {name!r} is not finite at t = {time_s} s: {p[k].tolist()}")
            staged_points[name] = p
        staged_poses = {}
        for name, pose in rigid_poses.items():
            if name not in self._rigids:
                raise ValueError(f"write_frame: unknown rigid part {name!r} (declared: {sorted(self._rigids)})")
            try:
                pos, quat = pose
            except (TypeError, ValueError) as e:
                raise ValueError(f"write_frame: pose of {name!r} must be (position (3,), quaternion xyzw (4,))") from e
            pos = np.asarray(pos, dtype=np.float64)
            quat = np.asarray(quat, dtype=np.float64)
            if pos.shape != (3,) or quat.shape != (4,):
                raise ValueError(
                    f"write_frame: pose of {name!r} must be (position (3,), quaternion xyzw (4,)), got {pos.shape}, "
                    f"{quat.shape}"
                )
            norm = float(np.linalg.norm(quat))
            if not (np.all(np.isfinite(pos)) and math.isfinite(norm) and norm > 1e-12):
                raise ValueError(
                    f"write_frame: pose of {name!r} is not finite or has a zero quaternion at t = {time_s} s"
                )
            staged_poses[name] = (pos, quat / norm)

        for name, p in staged_points.items():
            mesh = self._meshes[name][0]
            mesh.GetPointsAttr().Set(Vt.Vec3fArray.FromNumpy(p.astype(np.float32)), code)
            used = p[: self._meshes[name][1] + 1]
            mesh.GetExtentAttr().Set(
                Vt.Vec3fArray([Gf.Vec3f(*used.min(axis=0).tolist()), Gf.Vec3f(*used.max(axis=0).tolist())]), code
            )
        for name, (pos, q) in staged_poses.items():
            translate, orient = self._rigids[name]
            translate.Set(Gf.Vec3d(*pos.tolist()), code)
            orient.Set(
                Gf.Quatd(float(q[3]), Gf.Vec3d(float(q[0]), float(q[1]), float(q[2]))), code
            )  # USD: (real, imaginary)
        self._times.append(code)

    # -- output ----------------------------------------------------------------------------------------------------
    @property
    def frame_count(self) -> int:
        return len(set(self._times))

    def close(self) -> Path:
        """Set the stage start/end time codes and write the file atomically. Returns the path. Idempotent."""
        if self._closed:
            return self.path
        start, end = (min(self._times), max(self._times)) if self._times else (0.0, 0.0)
        self.stage.SetStartTimeCode(start)
        self.stage.SetEndTimeCode(end)
        # The temporary name keeps the extension, from which USD picks the text or crate format.
        with atomic_path(self.path, self.path.suffix) as tmp:
            if not self.stage.GetRootLayer().Export(str(tmp)):
                raise OSError(f"UsdAnimationWriter: USD could not write {str(tmp)!r}")
        self._closed = True
        return self.path

    def discard(self) -> None:
        """Drop the collected animation without writing anything."""
        self._closed = True

    def __enter__(self) -> "UsdAnimationWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()
