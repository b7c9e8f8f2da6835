"""Atomic writers (softsnake.io.files), the USD animation writer (softsnake.io.usd) and tet-mesh surface extraction."""

import json
import os

import numpy as np
import pytest

from softsnake.geometry.surface import surface_triangles
from softsnake.io.files import (
    atomic_path,
    ensure_writable_dir,
    save_figure_atomic,
    write_json_atomic,
    write_npz_atomic,
    write_text_atomic,
)
from softsnake.io.usd import UsdAnimationWriter


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


# ----------------------------------------------------------------------------------------------------------------------
# Atomic writers.
# ----------------------------------------------------------------------------------------------------------------------
def test_npz_text_json_roundtrip(tmp_path):
    a = np.arange(12.0).reshape(3, 4)
    p = write_npz_atomic(tmp_path / "sub" / "x.npz", a=a, b=np.int32(7))
    with np.load(p) as z:
        np.testing.assert_array_equal(z["a"], a)
        assert int(z["b"]) == 7
    write_text_atomic(tmp_path / "t.txt", "héllo\n")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "héllo\n"
    write_json_atomic(tmp_path / "r.json", {"v": np.float64(1.5), "arr": np.arange(3), "path": tmp_path / "q"})
    assert json.loads((tmp_path / "r.json").read_text()) == {"v": 1.5, "arr": [0, 1, 2], "path": str(tmp_path / "q")}
    assert _leftovers(tmp_path) == [] and _leftovers(tmp_path / "sub") == []
    # Results get ordinary permissions, not mkstemp's 0600.
    umask = os.umask(0)
    os.umask(umask)
    assert (p.stat().st_mode & 0o777) == (0o666 & ~umask)


def test_interrupted_write_leaves_nothing(tmp_path):
    target = tmp_path / "out.npz"
    seen = {}
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_path(target) as tmp:
            seen["tmp"] = tmp
            assert tmp.parent == tmp_path and tmp.name.endswith(".npz") and tmp.name.startswith(".")
            with open(tmp, "wb") as f:
                f.write(b"PK\x03\x04 half an archive")
            raise RuntimeError("boom")
    assert not target.exists() and not seen["tmp"].exists()
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_previous_file(tmp_path):
    target = tmp_path / "r.json"
    write_json_atomic(target, {"ok": 1})

    class Unserialisable:
        pass

    with pytest.raises(TypeError):
        write_json_atomic(target, {"bad": Unserialisable()})
    with pytest.raises(KeyboardInterrupt):
        with atomic_path(target) as tmp:
            tmp.write_text('{"tru')
            raise KeyboardInterrupt
    assert json.loads(target.read_text()) == {"ok": 1}
    assert _leftovers(tmp_path) == []


def test_npz_failure_mid_write(tmp_path):
    # np.savez_compressed fails part-way on an object it cannot pickle; no .npz may appear.
    class NoPickle:
        def __reduce__(self):
            raise RuntimeError("cannot pickle")

    with pytest.raises(RuntimeError, match="cannot pickle"):
        write_npz_atomic(tmp_path / "x.npz", good=np.zeros(1000), bad=np.array([NoPickle()], dtype=object))
    assert list(tmp_path.iterdir()) == []


def test_save_figure_atomic(tmp_path):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1], [1, 0])
    p = save_figure_atomic(fig, tmp_path / "f.png", dpi=50)
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    save_figure_atomic(fig, tmp_path / "f.pdf")
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"
    assert _leftovers(tmp_path) == []


def test_ensure_writable_dir(tmp_path):
    d = ensure_writable_dir(tmp_path / "a" / "b")
    assert d.is_dir()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match="output folder .* is not writable"):
        ensure_writable_dir(blocker / "sub")
    with pytest.raises(ValueError, match="output folder .* is not writable"):
        ensure_writable_dir(blocker)
    with pytest.raises(ValueError, match="is not writable"):
        write_npz_atomic(blocker / "x.npz", a=np.zeros(2))


def test_ensure_writable_dir_read_only(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        try:  # root (and some filesystems) ignore the mode bits; then there is nothing to test
            (ro / "probe").write_text("")
        except OSError:
            pass
        else:
            pytest.skip("this user can write into a 0555 folder (root?)")
        with pytest.raises(ValueError, match="output folder .* is not writable"):
            ensure_writable_dir(ro)
        with pytest.raises(ValueError, match="output folder .* is not writable"):
            ensure_writable_dir(ro / "child")
    finally:
        ro.chmod(0o755)


# ----------------------------------------------------------------------------------------------------------------------
# Surface extraction.
# ----------------------------------------------------------------------------------------------------------------------
def _outward_ok(points, tets, tris):
    """Every boundary triangle's right-hand normal points away from the centroid of the tet that owns it."""
    for tri in tris:
        owner = next(t for t in tets if set(tri) <= set(t))
        a, b, c = points[tri]
        n = np.cross(b - a, c - a)
        centroid = points[owner].mean(axis=0)
        if np.dot(n, (a + b + c) / 3 - centroid) <= 0:
            return False
    return True


def test_surface_single_tet():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=float)
    tets = np.array([[0, 1, 2, 3]])
    tris = surface_triangles(tets)
    assert tris.shape == (4, 3)
    assert {tuple(sorted(t)) for t in tris.tolist()} == {(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)}
    assert _outward_ok(pts, tets, tris)
    # Divergence theorem: sum of (centroid . n) / 3 * area over outward faces is the volume 1/6.
    a, b, c = (pts[tris[:, k]] for k in range(3))
    vol = np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0
    assert vol == pytest.approx(1.0 / 6.0)


def test_surface_two_tets():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, -1]], dtype=float)
    tets = np.array([[0, 1, 2, 3], [0, 2, 1, 4]])  # share face (0, 1, 2); both positively oriented
    for t in tets:
        assert np.linalg.det(pts[t[1:]] - pts[t[0]]) > 0
    tris = surface_triangles(tets)
    assert tris.shape == (6, 3)
    assert (0, 1, 2) not in {tuple(sorted(t)) for t in tris.tolist()}
    assert _outward_ok(pts, tets, tris)
    a, b, c = (pts[tris[:, k]] for k in range(3))
    assert np.einsum("ij,ij->", a, np.cross(b, c)) / 6.0 == pytest.approx(2.0 / 6.0)


def test_surface_validation():
    with pytest.raises(ValueError, match=r"shape \(m, 4\)"):
        surface_triangles(np.zeros((2, 3), dtype=int))
    with pytest.raises(ValueError, match="repeats a vertex"):
        surface_triangles(np.array([[0, 1, 1, 2]]))
    with pytest.raises(ValueError, match="shared by 3 tets"):
        surface_triangles(np.array([[0, 1, 2, 3], [0, 2, 1, 4], [0, 1, 2, 5]]))
    assert surface_triangles(np.zeros((0, 4), dtype=int)).shape == (0, 3)


# ----------------------------------------------------------------------------------------------------------------------
# USD.
# ----------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".usda", ".usdc"])
def test_usd_roundtrip(tmp_path, suffix):
    from pxr import Gf, Usd, UsdGeom

    pts0 = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.2, 0.2, 0.2]], dtype=float)
    tets = np.array([[0, 1, 2, 3]])
    tris = surface_triangles(tets)
    fps, frames = 30.0, 5
    path = tmp_path / f"anim{suffix}"
    written = []
    angle = np.linspace(0.0, np.pi / 2, frames)
    with UsdAnimationWriter(path, fps) as w:
        w.add_soft_mesh("body", tris)
        w.add_box("plate", (0.1, 0.2, 0.05))
        w.add_cylinder("wheel", 0.05, 0.01, axis="Y")
        for k in range(frames):
            pts = pts0 + np.array([0.01 * k, 0.0, 0.0])
            q = np.array([0.0, 0.0, np.sin(angle[k] / 2), np.cos(angle[k] / 2)])  # about z, xyzw
            w.write_frame(k / fps, {"body": pts}, {"plate": ([k * 0.1, 0, 0.5], q), "wheel": ([0, 0, 0], [0, 0, 0, 1])})
            written.append((pts, q))
        assert not path.exists()  # nothing on disk until close
    assert path.exists() and _leftovers(tmp_path) == []

    stage = Usd.Stage.Open(str(path))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetTimeCodesPerSecond() == fps
    assert stage.GetStartTimeCode() == 0.0 and stage.GetEndTimeCode() == frames - 1
    assert stage.GetDefaultPrim().GetPath() == "/World"

    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/World/body"))
    assert mesh.GetPointsAttr().GetTimeSamples() == [float(k) for k in range(frames)]
    assert list(mesh.GetFaceVertexCountsAttr().Get()) == [3] * 4
    np.testing.assert_array_equal(np.array(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3), tris)
    for k in (0, 3):
        got = np.array(mesh.GetPointsAttr().Get(float(k)))
        np.testing.assert_allclose(got, written[k][0], rtol=0, atol=1e-7)  # stored as float32

    plate = stage.GetPrimAtPath("/World/plate")
    xf = UsdGeom.Xformable(plate)
    assert [op.GetOpName() for op in xf.GetOrderedXformOps()] == ["xformOp:translate", "xformOp:orient"]
    m = xf.ComputeLocalToWorldTransform(4.0)
    # Rotation by pi/2 about z maps body x to world y; translation (0.4, 0, 0.5).
    np.testing.assert_allclose(np.array(m.TransformDir(Gf.Vec3d(1, 0, 0))), [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(np.array(m.ExtractTranslation()), [0.4, 0, 0.5], atol=1e-12)
    qk = xf.GetOrderedXformOps()[1].Get(2.0)
    q = written[2][1]
    np.testing.assert_allclose([qk.GetReal(), *qk.GetImaginary()], [q[3], q[0], q[1], q[2]], atol=1e-12)
    assert len(xf.GetOrderedXformOps()[0].GetAttr().GetTimeSamples()) == frames
    assert stage.GetPrimAtPath("/World/plate/geom").GetTypeName() == "Cube"
    cyl = UsdGeom.Cylinder(stage.GetPrimAtPath("/World/wheel/geom"))
    assert (
        cyl.GetAxisAttr().Get() == "Y"
        and cyl.GetRadiusAttr().Get() == 0.05
        and cyl.GetHeightAttr().Get() == pytest.approx(0.02)
    )


def test_usd_exception_in_block_writes_nothing(tmp_path):
    path = tmp_path / "a.usda"
    with pytest.raises(RuntimeError):
        with UsdAnimationWriter(path, 60.0) as w:
            w.add_box("b", (1, 1, 1))
            w.write_frame(0.0, rigid_poses={"b": ([0, 0, 0], [0, 0, 0, 1])})
            raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []


def test_usd_validation(tmp_path):
    with pytest.raises(ValueError, match="must end in"):
        UsdAnimationWriter(tmp_path / "a.obj", 30)
    with pytest.raises(ValueError, match="fps"):
        UsdAnimationWriter(tmp_path / "a.usda", 0)
    with pytest.raises(ValueError, match="up_axis"):
        UsdAnimationWriter(tmp_path / "a.usda", 30, up_axis="X")
    w = UsdAnimationWriter(tmp_path / "a.usda", 30)
    w.add_soft_mesh("m", np.array([[0, 1, 2]]))
    with pytest.raises(ValueError, match="already exists"):
        w.add_box("m", (1, 1, 1))
    with pytest.raises(ValueError, match="valid USD prim name"):
        w.add_box("bad name", (1, 1, 1))
    with pytest.raises(ValueError, match="half_extents"):
        w.add_box("b", (1, -1, 1))
    with pytest.raises(ValueError, match="axis"):
        w.add_cylinder("c", 1.0, 1.0, axis="W")
    with pytest.raises(ValueError, match="unknown soft mesh"):
        w.write_frame(0.0, {"nope": np.zeros((3, 3))})
    with pytest.raises(ValueError, match="uses index 2|use index 2"):
        w.write_frame(0.0, {"m": np.zeros((2, 3))})
    bad = np.zeros((3, 3))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="point 1 of 'm' is not finite"):
        w.write_frame(0.0, {"m": bad})
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.write_frame(1.0, {"m": np.zeros((3, 3))})
