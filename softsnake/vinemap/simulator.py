"""Visibility-graph vine-robot simulator (Fuentes et al. 2025, Section 3, Algorithms 1-3).

Units: metres and radians. The robot is a polyline ``S`` from the launch point through its fixed bends (obstacle
vertices it wraps around and, once frozen, the pre-formed turn), then a *free part* that still moves: a straight
segment from the last pivot ``B`` or, while a turn is active, ``B -> T`` (length ``l_b``) and ``T -> tip``.

Event loop (Algorithm 1): grow the free part straight until it hits the bumpered environment, forms its turn, or
runs out of length. A hit is resolved by the collision logic of Algorithm 2 (straight) or Algorithm 3 (turning):

* at a wall the tip slides towards the end making the obtuse angle with the body, the body pivoting about its last
  contact; if the acute contact angle exceeds Eq. 3 the robot is *stuck* (axial buckling ends growth);
* while sliding, the first visibility-graph vertex swept by the body becomes a new pivot ("wrapping");
* at a wall end (an obstacle vertex) the robot *skims* past a convex corner, *slides* onto the next edge, or is
  *stuck* in a concave corner;
* with an active turn the morphology (Eqs. 13-15) decides whether the whole robot rotates about ``B``
  (positive/negative pivot, final pose from Eq. 30), the turn becomes a fixed pivot (pivot-at-turn), or the tip is
  friction-locked while the turn moves on the circle of Eqs. 26-29 until the nearest boundary angle is reached.

Every final-shape vertex is therefore the launch point, an obstacle (bumper) vertex, the turn point, or the tip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .environment import Scene
from .geometry2d import (
    EPS,
    angle_of,
    circle_intersection_nearest,
    cross,
    line_circle_param,
    norm,
    points_in_polygon,
    points_in_triangle,
    ray_cast,
    ray_line_intersection,
    segment_crosses_edges,
    unit,
    wrap,
)
from .kinematics import (
    body_angle_to_reach,
    boundary_fl_np,
    boundary_pat_fl,
    classify_turn_morphology,
    critical_contact_angle,
)

__all__ = ["Action", "Deployment", "simulate"]

_SNAP = 1e-7  # distance [m] under which a ray hit counts as hitting a vertex


@dataclass(frozen=True)
class Action:
    """One deployment: launch point [m], launch angle [rad], length [m], optional turn.

    ``turn_fraction`` in ``(0, 1)`` places the pre-formed turn at that fraction of ``length`` from the base;
    ``turn_angle`` [rad] is signed (positive = counter-clockwise).
    """

    launch: tuple[float, float]
    angle: float
    length: float
    turn_fraction: float | None = None
    turn_angle: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.length) and self.length > 0):
            raise ValueError(f"robot length must be a positive number of metres, got {self.length}")
        if not math.isfinite(self.angle):
            raise ValueError(f"launch angle must be finite, got {self.angle}")
        if self.turn_fraction is not None and not (0.0 < self.turn_fraction < 1.0):
            raise ValueError(f"turn fraction must lie strictly between 0 and 1, got {self.turn_fraction}")
        if not math.isfinite(self.turn_angle) or abs(self.turn_angle) >= math.pi:
            raise ValueError(f"turn angle must be finite and within (-180, 180) degrees, got {self.turn_angle}")

    @property
    def has_turn(self) -> bool:
        return self.turn_fraction is not None and self.turn_angle != 0.0


@dataclass
class Deployment:
    """Result of one simulated deployment (Algorithm 1 outputs ``S``, ``W``, ``A``), metres."""

    shape: np.ndarray  # (k, 2) final robot centreline: launch, bends, tip
    walls: list[np.ndarray]  # contacted wall pieces, each (2, 2), on the bumpered geometry
    wall_normals: list[np.ndarray]  # unit normals pointing from free space into the solid, one per wall
    wall_on_boundary: list[bool]  # whether each wall piece lies on the workspace boundary
    swept: list[np.ndarray]  # polygons swept by the body while pivoting
    events: list[str] = field(default_factory=list)
    stuck: bool = False
    phases: list[dict] = field(default_factory=list)  # growth history, used to synthesise sensor streams
    turn_point: np.ndarray | None = None

    @property
    def length(self) -> float:
        return float(np.sum(np.hypot(*np.diff(self.shape, axis=0).T)))


class _Sim:
    def __init__(self, scene: Scene, action: Action, max_events: int):
        self.sc = scene
        self.a = action
        self.max_events = max_events
        self.V = scene.verts
        self.S = [np.asarray(action.launch, float)]
        self.lS = 0.0
        self.theta = float(action.angle)
        self.turning = False
        self.T = None
        self.lb = 0.0
        self.tt = float(action.turn_angle)
        self.turn_pending = action.has_turn
        self.LT = (action.turn_fraction or 0.0) * action.length
        self.skimmed: list[tuple[np.ndarray, float, int, bool]] = []  # (point, dist from ray source, side, on La)
        self.t_min = 0.0
        self.contacts_left = 60
        self.out = Deployment(np.zeros((0, 2)), [], [], [], [])

    # -- small helpers -----------------------------------------------------------------------------------------
    @property
    def B(self) -> np.ndarray:
        return self.S[-1]

    @property
    def Lf(self) -> float:
        return self.a.length - self.lS

    def push(self, p) -> None:
        p = np.asarray(p, float)
        self.lS += norm(p - self.S[-1])
        self.S.append(p)

    def edge_normal(self, k: int) -> np.ndarray:
        e = self.V[self.sc.next[k]] - self.V[k]
        n = np.array([e[1], -e[0]]) / max(norm(e), 1e-300)  # right normal: interior of a clockwise polygon
        return -n if self.sc.inverted[self.sc.poly_of[k]] else n

    def add_wall(self, p, q, k: int) -> None:
        self.out.walls.append(np.array([p, q], float))
        self.out.wall_normals.append(self.edge_normal(k))
        self.out.wall_on_boundary.append(bool(self.sc.inverted[self.sc.poly_of[k]]))

    def finish(self, tip, stuck: bool = False, event: str = "free") -> None:
        if self.turning:
            self.push(self.T)
            self.out.turn_point = np.array(self.T)
            self.turning = False
        if norm(np.asarray(tip) - self.B) > EPS:
            self.push(tip)
        self.out.stuck = stuck
        self.out.events.append(event)
        self.done = True

    def freeze_turn(self) -> None:
        """The turn point becomes a fixed bend of the shape (Algorithm 3: ``turning <- false``)."""
        self.push(self.T)
        self.out.turn_point = np.array(self.T)
        self.theta = self.theta + self.tt
        self.turning = False
        self.skimmed = [(p, d - self.lb, s, False) for (p, d, s, on_la) in self.skimmed if on_la]

    def wall_candidates(self, k: int | None, j: int | None):
        """Slide end-points from a hit: both ends of edge ``k``, or both neighbours of vertex ``j``."""
        if j is not None:
            return [(int(self.sc.prev[j]), int(self.sc.prev[j])), (int(self.sc.next[j]), j)]
        return [(k, k), (int(self.sc.next[k]), k)]  # (end vertex, edge index)

    # -- main loop (Algorithm 1) -----------------------------------------------------------------------------
    def run(self) -> Deployment:
        self.done = False
        for _ in range(self.max_events):
            if self.done:
                break
            self.step()
        if not self.done:  # safety net: stop where the free part currently ends
            self.out.events.append("max_events")
            self.finish(self.T if self.turning else self.B)
        self.out.shape = np.array(self.S)
        return self.out

    def step(self) -> None:
        if self.turning:
            src, d, avail, arc0 = self.T, unit(self.theta + self.tt), self.Lf - self.lb, self.lS + self.lb
        else:
            src, d, avail, arc0 = self.B, unit(self.theta), self.Lf, self.lS
        if avail <= EPS:
            self.finish(src)
            return
        hit = ray_cast(src, d, self.t_min, avail, self.sc.edge_a, self.sc.edge_b)
        t_hit = hit[0] if hit else avail
        if self.turn_pending and not self.turning and self.LT - self.lS < t_hit - EPS:
            # Algorithm 1 lines 11-15: the turn forms before the next collision. A turn whose arclength was passed
            # while the tip slid along a wall forms where free growth resumes.
            t_turn = max(self.LT - self.lS, self.t_min)
            self.turn_pending = False
            self.out.phases.append(dict(kind="free", src=src.copy(), arc=arc0, d=d, t0=self.t_min, t1=t_turn))
            if t_turn <= EPS:
                self.theta += self.tt  # the turn coincides with a fixed pivot: a permanent bend there
                return
            self.T = src + t_turn * d
            self.lb = t_turn
            self.turning = True
            if self.sc.solid(self.T + 1e-6 * unit(self.theta + self.tt)):
                self.finish(self.T, stuck=True, event="turn_into_wall")
                return
            self.skimmed = [(p, dd, s, False) for (p, dd, s, _) in self.skimmed]
            self.t_min = 0.0
            self.out.events.append("turn")
            return
        self.out.phases.append(
            dict(kind="free", src=src.copy(), arc=arc0, d=d, t0=self.t_min, t1=t_hit if hit else avail)
        )
        if hit is None:
            self.finish(src + avail * d)
            return
        t, k, s = hit
        h = src + t * d
        j = None
        if norm(h - self.V[k]) < _SNAP:
            j = k
        elif norm(h - self.V[self.sc.next[k]]) < _SNAP:
            j = int(self.sc.next[k])
        if j is not None:
            self.at_vertex(j, src, d, t)
        else:
            self.contact(h, self.wall_candidates(k, None), d)

    # -- vertex logic (Algorithm 2, lines 2-17) -----------------------------------------------------------------
    def at_vertex(self, j: int, src, d, dist: float) -> None:
        v = self.V[j]
        if not self.sc.solid(v + 1e-6 * d):
            # Skim: the growth direction continues into free space past this corner.
            # The obstacle lies on the side of the growth line where both neighbouring edges of the corner go.
            side_sum = 0.0
            for nb in (self.sc.prev[j], self.sc.next[j]):
                w = self.V[nb] - v
                side_sum += cross(d, w) / max(norm(w), 1e-300)
            side = 1 if side_sum > 1e-12 else (-1 if side_sum < -1e-12 else 0)
            self.skimmed.append((v.copy(), dist, side, self.turning))
            self.t_min = dist
            self.out.events.append("skim")
            return
        self.contact(v.copy(), self.wall_candidates(None, j), d)

    # -- wall contact (Algorithm 2 lines 18-34, Algorithm 3) ------------------------------------------------------
    def contact(self, h, cands, d) -> None:
        """Tip at ``h`` pressed against the wall(s) in ``cands`` = [(end vertex, edge index)], heading ``d``."""
        self.contacts_left -= 1
        if self.contacts_left <= 0:  # guard against zero-length ping-pong between two wall ends
            self.finish(h, stuck=True, event="max_events")
            return
        best = None
        for e_idx, k in cands:
            w = self.V[e_idx] - h
            lw = norm(w)
            if lw < EPS:
                continue
            c = float(np.dot(d, w)) / lw
            if c > 1e-12 and (best is None or c > best[0]):
                best = (c, e_idx, k, w / lw)
        if best is None:  # head-on into a concave corner: no wall direction is ahead of the tip
            self.out.events.append("stuck_corner")
            self.finish(h, stuck=True, event="stuck")
            return
        if self.turning:
            self.contact_turning(h, cands, d, best)
            return
        _, e_idx, k, w = best
        psi = math.acos(min(1.0, best[0]))  # acute angle between heading and wall
        s = 1 if cross(d, w) > 0 else -1
        self.pivot_from_skimmed(s)
        if psi > critical_contact_angle(norm(h - self.B), self.sc.radius, self.sc.friction):
            self.out.events.append("stuck_wall")
            self.finish(h, stuck=True, event="stuck")
            return
        self.slide_straight(h, e_idx, k, d)

    def pivot_from_skimmed(self, s: int) -> None:
        """When the body rotates towards side ``s``, the most distal skimmed corner on that side becomes the pivot
        (Algorithm 1 line 22, wrapping around ``n_hprev``); corners on the other side are released."""
        cand = [(dd, p) for (p, dd, side, on_la) in self.skimmed if side == s and not on_la]
        self.skimmed = []
        self.t_min = 0.0
        if cand:
            dd, p = max(cand, key=lambda c: c[0])
            self.push(p)
            self.theta = angle_of(p - self.S[-2])

    def slide_straight(self, h, e_idx: int, k: int, d) -> None:
        """Tip slides from ``h`` towards vertex ``e_idx`` while the body pivots about ``B`` (Fig. 2)."""
        B, Lf, e = self.B, self.Lf, self.V[e_idx]
        w = e - h
        lw = norm(w)
        reached = norm(e - B) <= Lf + EPS
        if reached:
            tip = e
        else:
            roots = line_circle_param(h, w / lw, B, Lf)
            tip = h + (roots[1] if roots else 0.0) * (w / lw)
        turn_now = False
        if self.turn_pending and norm(h - B) - EPS <= self.LT - self.lS < norm(tip - B):
            # The turn everts while the tip slides: it forms at the tip's contact point (Algorithm 1 line 7).
            roots = line_circle_param(h, w / lw, B, self.LT - self.lS)
            tip = h + (roots[1] if roots else 0.0) * (w / lw)
            reached, turn_now = False, True
        # Wrapping: the first vertex swept by the body (segment B -> tip) becomes the new pivot.
        mask = points_in_triangle(self.V, B, h, tip)
        if mask.any():
            idx = np.flatnonzero(mask)
            rel = self.V[idx] - B
            ang = np.abs(np.arctan2(d[0] * rel[:, 1] - d[1] * rel[:, 0], rel @ d))
            dist = np.hypot(rel[:, 0], rel[:, 1])
            order = np.lexsort((-dist, np.round(ang, 12)))
            v = self.V[idx[order[0]]].copy()
            uv = (v - B) / norm(v - B)
            t2 = ray_line_intersection(B, uv, h, e)
            h2 = B + t2 * uv
            self.record_slide(B, h, h2, k)
            self.push(v)
            self.theta = angle_of(uv)
            self.skimmed, self.t_min = [], 0.0
            self.out.events.append("wrap")
            return
        self.record_slide(B, h, tip, k)
        if turn_now:
            self.turn_pending = False
            self.theta = angle_of(tip - B)
            self.T, self.lb, self.turning = tip.copy(), norm(tip - B), True
            self.skimmed, self.t_min = [], 0.0
            self.out.events.append("turn")
            if self.sc.solid(tip + 1e-6 * unit(self.theta + self.tt)):
                self.finish(tip, stuck=True, event="turn_into_wall")  # the fold everts into the wall: tip pinned
            return
        if not reached:
            self.finish(tip, event="slide_end")
            return
        u = (e - B) / norm(e - B)
        self.theta = angle_of(u)
        self.skimmed, self.t_min = [], 0.0
        self.at_vertex(e_idx, B, u, norm(e - B))

    def record_slide(self, B, h, h2, k: int) -> None:
        self.add_wall(h, h2, k)
        self.out.swept.append(np.array([B, h, h2], float))
        self.out.phases.append(dict(kind="slide", pivot=np.array(B), arc=self.lS, h=np.array(h), h2=np.array(h2)))
        self.out.events.append("slide")

    # -- turning kinematics (Algorithm 3) ---------------------------------------------------------------------
    def contact_turning(self, h, cands, d, best) -> None:
        _, e_press, k_press, w = best
        sigma = 1 if self.tt > 0 else -1
        psi = math.acos(min(1.0, best[0]))
        theta_c = psi if cross(d, w) * sigma > 0 else math.pi - psi  # measured in the turn's sense (Fig. 5)
        la = norm(h - self.T)
        morph = classify_turn_morphology(theta_c, abs(self.tt), self.sc.friction, self.lb, la, self.sc.radius)
        self.out.events.append(morph)
        if morph == "friction_locked":
            self.friction_locked(h, cands, d, theta_c, la, sigma)
            return
        r = -sigma if morph == "negative_pivot" else sigma
        if morph == "pivot_at_turn":
            self.pivot_at_turn(h, cands, d, r)
            return
        self.rotate_about_pivot(h, cands, d, r)

    def pick_side(self, h, cands, d, r: int):
        """The slide end-point on rotation side ``r`` (tip moving to the left of ``d`` for ``r = +1``)."""
        best = None
        for e_idx, k in cands:
            w = self.V[e_idx] - h
            lw = norm(w)
            if lw < EPS or cross(d, w) * r <= 0:
                continue
            c = float(np.dot(d, w)) / lw
            if best is None or c > best[0]:
                best = (c, e_idx, k)
        return None if best is None else (best[1], best[2])

    def straight_side(self, h, cands, d, r: int):
        """Slide end-point for a straight slide about the current pivot ``B`` on rotation side ``r``. The tip of a
        growing straight segment can only slide away from the foot of the perpendicular from ``B`` (``|tip - B|``
        grows with the length); if side ``r`` points towards it there is no quasi-static motion that way and the
        tip slides to the other side, as in Algorithm 2 (towards the end making the obtuse angle with the body)."""
        choice = self.pick_side(h, cands, d, r)
        if choice is not None and float(np.dot(h - self.B, self.V[choice[0]] - h)) < -EPS * norm(self.V[choice[0]] - h):
            other = self.pick_side(h, cands, d, -r)
            if other is not None:
                self.out.events.append("side_flipped")
                return other
        return choice

    def pivot_at_turn(self, h, cands, d, r) -> None:
        """The turn becomes the pivot: freeze it, pivot about the skimmed vertex and slide on the chosen side."""
        self.freeze_turn()
        self.pivot_from_skimmed(r)
        choice = self.straight_side(h, cands, d, r)
        if choice is None:
            self.finish(h, stuck=True, event="stuck")
            return
        self.slide_straight(h, choice[0], choice[1], d)

    def rotate_about_pivot(self, h, cands, d, r: int) -> None:
        """Positive/negative pivot: the turned robot rotates rigidly about ``B`` while the tip slides (Eqs. 23-25)."""
        la_sk = [(dd, p) for (p, dd, side, on_la) in self.skimmed if on_la and side == r]
        if la_sk:  # the post-turn segment presses on a skimmed corner: that corner pivots, the turn is frozen
            dd, p = max(la_sk, key=lambda c: c[0])
            self.freeze_turn()
            self.skimmed = []
            self.push(p)
            self.theta = angle_of(p - self.S[-2])
            choice = self.straight_side(h, cands, d, r)
            if choice is None:
                self.finish(h, stuck=True, event="stuck")
                return
            self.slide_straight(h, choice[0], choice[1], d)
            return
        lb_sk = [(dd, p) for (p, dd, side, on_la) in self.skimmed if not on_la and side == r]
        if lb_sk:  # a corner skimmed before the turn becomes the pivot B
            dd, p = max(lb_sk, key=lambda c: c[0])
            self.push(p)
            self.lb -= dd
        self.skimmed, self.t_min = [], 0.0
        choice = self.pick_side(h, cands, d, r)
        if choice is None:
            self.finish(h, stuck=True, event="stuck")
            return
        e_idx, k = choice
        B, lb, tt, e = self.B, self.lb, self.tt, self.V[e_idx]
        a0 = angle_of(self.T - B)
        wdir = (e - h) / norm(e - h)
        if float(np.dot(h - B, wdir)) < -EPS:
            # Rigid rotation moves the tip along the wall towards the foot of the perpendicular from B, i.e. closer
            # to B, while the robot (|tip - B| grows with l_a) lengthens: no quasi-static path exists. The turn
            # cannot rotate and acts as a fixed bend; straight kinematics take over (as for a blocked body).
            self.out.events.append("rotation_blocked")
            self.freeze_turn()
            self.contact(h, cands, d)
            return
        a_e = body_angle_to_reach(B, e, lb, tt)
        reached = False
        if a_e is not None and wrap(a_e - a0) * r >= -1e-9:
            la_e = norm(e - (B + lb * unit(a_e)))
            reached = lb + la_e <= self.Lf + EPS
        if reached:
            a1, tip1 = a_e, e.copy()
        else:
            a1 = self.length_limited_angle(B, lb, tt, h, wdir, a0, r)
            if a1 is None:
                self.finish(h, stuck=True, event="stuck")
                return
            tip1 = B + lb * unit(a1) + (self.Lf - lb) * unit(a1 + tt)
        T0, T1 = self.T.copy(), B + lb * unit(a1)
        sweep = wrap(a1 - a0) * r
        if self.body_blocked(B, T0, T1, tip1):
            # The pre-turn segment would swing through a wall: the turn stops rotating and acts as a fixed bend.
            self.freeze_turn()
            self.contact(h, cands, d)
            return
        poly = np.array([B, T0, h, tip1, T1])
        mask = points_in_polygon(self.V, poly)
        for p in poly:  # vertices on the sweep outline (pivot, wall ends) are not new contacts
            mask &= np.hypot(*(self.V - p).T) > 1e-7
        hit = None
        for j in np.flatnonzero(mask):
            v = self.V[j]
            rho = norm(v - B)
            phi = angle_of(v - B)
            if rho <= lb:
                sols = [(phi, False)]
            else:
                x = -lb * math.sin(tt) / rho
                if abs(x) > 1:
                    continue
                sols = [(phi - tt - math.asin(x), True), (phi - tt - (math.pi - math.asin(x)), True)]
            for a_v, on_la in sols:
                rot = wrap(a_v - a0) * r
                if rot < -1e-12 or rot > sweep + 1e-12:
                    continue
                if on_la and float(np.dot(v - (B + lb * unit(a_v)), unit(a_v + tt))) <= 0:
                    continue
                if hit is None or rot < hit[0]:
                    hit = (rot, a_v, j, on_la)
        if hit is not None:
            _, a_v, j, on_la = hit
            Tv = B + lb * unit(a_v)
            t2 = ray_line_intersection(Tv, unit(a_v + tt), h, e)
            tipv = Tv + (t2 if t2 is not None else 0.0) * unit(a_v + tt)
            self.record_turn_slide(B, T0, h, tipv, Tv, k)
            v = self.V[j].copy()
            self.T, self.theta = Tv, a_v
            if on_la:
                self.freeze_turn()
                self.skimmed = []
                self.push(v)
                self.theta = angle_of(v - Tv)
            else:
                self.push(v)
                self.lb -= norm(v - B)
            self.out.events.append("wrap")
            return
        self.record_turn_slide(B, T0, h, tip1, T1, k)
        self.T, self.theta = T1, a1
        if not reached:
            self.finish(tip1, event="slide_end")
            return
        self.at_vertex(e_idx, T1, unit(a1 + tt), norm(e - T1))

    def body_blocked(self, B, T0, T1, tip) -> bool:
        ea, eb = self.sc.edge_a, self.sc.edge_b
        return (
            segment_crosses_edges(B, T1, ea, eb)
            or segment_crosses_edges(T0, T1, ea, eb)
            or segment_crosses_edges(T1, tip, ea, eb)
        )

    def length_limited_angle(self, B, lb, tt, h, wdir, a0, r):
        """Pre-turn direction at which the tip, with all remaining length used, lies on the wall line."""
        la = self.Lf - lb
        n = np.array([-wdir[1], wdir[0]])
        ct, st = math.cos(tt), math.sin(tt)
        A = lb * n[0] + la * (n[0] * ct + n[1] * st)
        Bc = lb * n[1] + la * (n[1] * ct - n[0] * st)
        C = float(np.dot(n, B - h))
        R0 = math.hypot(A, Bc)
        if R0 < 1e-15 or abs(C) > R0:
            return None
        base, off = math.atan2(Bc, A), math.acos(-C / R0)
        best = None
        for a in (base + off, base - off):
            rot = wrap(a - a0) * r
            if rot >= -1e-9 and (best is None or rot < best[0]):
                best = (rot, a)
        return None if best is None else best[1]

    def record_turn_slide(self, B, T0, h, tip, T1, k: int) -> None:
        self.add_wall(h, tip, k)
        self.out.swept.append(np.array([B, T0, h], float))
        self.out.swept.append(np.array([B, h, tip], float))
        self.out.swept.append(np.array([B, tip, T1], float))
        self.out.phases.append(
            dict(
                kind="turn_slide",
                pivot=np.array(B),
                arc=self.lS,
                lb=float(norm(T0 - B)),
                tt=float(self.tt),
                h=np.array(h),
                h2=np.array(tip),
            )
        )
        self.out.events.append("slide")

    def friction_locked(self, h, cands, d, theta_c, la, sigma) -> None:
        """Friction-Locked (Algorithm 3 lines 21-26): the tip stays at ``h`` while the turn point moves on the circle
        of radius ``l_b`` about ``B`` (Eq. 26) along the line through ``h`` at the nearest boundary angle (Eqs.
        27-29)."""
        b_fl = boundary_pat_fl(abs(self.tt), self.sc.friction, self.lb, la, self.sc.radius)
        b_np = boundary_fl_np(abs(self.tt), self.sc.friction, self.lb, la, self.sc.radius)
        target, th_star = (
            ("pivot_at_turn", b_fl) if abs(theta_c - b_fl) <= abs(theta_c - b_np) else ("negative_pivot", b_np)
        )
        c, s = math.cos(sigma * theta_c), math.sin(sigma * theta_c)
        t_line = np.array([c * d[0] - s * d[1], s * d[0] + c * d[1]])  # wall tangent at theta_c from d
        c, s = math.cos(-sigma * th_star), math.sin(-sigma * th_star)
        d_star = np.array([c * t_line[0] - s * t_line[1], s * t_line[0] + c * t_line[1]])
        wv = h - self.B
        q = float(np.dot(d_star, wv))
        disc = q * q - float(np.dot(wv, wv)) + self.lb * self.lb
        la_new = None
        if disc >= 0:
            roots = sorted(x for x in (q - math.sqrt(disc), q + math.sqrt(disc)) if x >= la - 1e-9)
            la_new = roots[0] if roots else None
        if la_new is None:
            # No real turn location (Algorithm 3 line 25): the turn stops acting, straight kinematics take over.
            self.freeze_turn()
            self.contact(h, cands, d)
            return
        if self.lb + la_new > self.Lf + EPS:
            # The robot runs out of length while locked: the turn point moves on the circle of Eq. 26 until the
            # post-turn length is Lf - lb; the tip stays at h.
            la_end = self.Lf - self.lb
            if la_end > la + EPS:
                T_end = self.locked_turn_point(h, la_end)
                if T_end is not None:
                    self.out.phases.append(
                        dict(
                            kind="friction_locked",
                            pivot=np.array(self.B),
                            arc=self.lS,
                            lb=self.lb,
                            T0=np.array(self.T),
                            T1=T_end,
                            tip=np.array(h),
                            w=t_line.copy(),
                            la0=la,
                            la1=la_end,
                        )
                    )
            self.finish(h, stuck=True, event="friction_locked_end")
            return
        T_new = h - la_new * d_star
        tt_new = wrap(angle_of(d_star) - angle_of(T_new - self.B))
        if self.body_blocked(self.B, self.T, T_new, h):
            self.freeze_turn()
            self.contact(h, cands, d)
            return
        self.out.swept.append(np.array([self.B, self.T, h, T_new], float))
        # Record the locked episode for the sensor streams: the tip stays at h while the robot grows by
        # la_new - la and the turn point moves from T to T_new on the circle of Eq. 26.
        self.out.phases.append(
            dict(
                kind="friction_locked",
                pivot=np.array(self.B),
                arc=self.lS,
                lb=self.lb,
                T0=np.array(self.T),
                T1=np.array(T_new),
                tip=np.array(h),
                w=t_line.copy(),
                la0=la,
                la1=la_new,
            )
        )
        self.T, self.theta = T_new, angle_of(T_new - self.B)
        if tt_new * sigma <= 0:
            self.freeze_turn()
            self.contact(h, cands, d_star)
            return
        self.tt = tt_new
        if target == "pivot_at_turn":
            self.pivot_at_turn(h, cands, d_star, sigma)
        else:
            self.rotate_about_pivot(h, cands, d_star, -sigma)

    def locked_turn_point(self, h, la: float):
        """Turn point of a friction-locked robot with post-turn length ``la``: on the circle of radius ``l_b`` about
        ``B`` (Eq. 26) at distance ``la`` from the pinned tip ``h``; the intersection nearer the current ``T``."""
        return _locked_turn_point(self.B, self.lb, h, la, self.T)


def _locked_turn_point(B, lb: float, h, la: float, T_ref):
    """Intersection of the circles ``|T - B| = lb`` and ``|T - h| = la`` nearest ``T_ref`` (``None`` if none)."""
    return circle_intersection_nearest(B, lb, h, la, T_ref)


def simulate(scene: Scene, action: Action, *, max_events: int = 200) -> Deployment:
    """Simulate one deployment (Algorithm 1) in a compiled :class:`Scene`; returns a :class:`Deployment`."""
    if scene.solid(action.launch):
        raise ValueError(f"launch point {tuple(action.launch)} is inside an obstacle (or its bumper)")
    return _Sim(scene, action, max_events).run()
