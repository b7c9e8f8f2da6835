"""Passive kinematics of a vine robot growing into a flat wall (Fuentes et al. 2025, Section 2).

All angles are in radians, all lengths in metres.

Conventions
-----------
* Straight robot (Section 2.1): the contact angle ``psi`` is the acute angle between the robot heading and the wall
  tangent, in ``[0, pi/2]``. The robot pivots about its previous contact (tip sliding along the wall) when
  ``psi < critical_contact_angle(L, R, mu)`` (Eq. 3) and axially buckles ("stuck") otherwise.
* Robot with one pre-formed turn (Section 2.2, Fig. 5): the turn angle ``theta_t > 0`` is measured in the turn's own
  rotation sense, and the collision angle ``theta_c`` in ``(0, pi)`` is measured in the same sense from the tip heading
  to the wall tangent. Small ``theta_c`` means the wall deflects the tip *towards* the turn direction. A negative
  turn is handled by mirroring (the caller measures both angles in the turn's rotation sense).
* ``l_b`` is the length from the previous pivot ``B`` to the turn ``T``, ``l_a`` the length from the turn to the tip.
  The paper writes its boundaries with a length ratio; the derivation of Eqs. 14-15 from Eqs. 6 and 9-10 needs the
  ratio ``l_b / l_a`` (the text's ``La/Lb`` is the reciprocal), so this module takes the two lengths explicitly.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "MORPHOLOGIES",
    "critical_contact_angle",
    "boundary_pp_pat",
    "boundary_pat_fl",
    "boundary_fl_np",
    "classify_turn_morphology",
    "body_angle_to_reach",
]

#: The four post-collision morphologies of a robot with a turn (Fig. 4).
MORPHOLOGIES = ("positive_pivot", "pivot_at_turn", "friction_locked", "negative_pivot")


def critical_contact_angle(length: float, radius: float, friction: float) -> float:
    """Critical contact angle between pivoting and axial buckling for a straight robot (Eq. 3) [rad].

    ``theta* = atan((L/R - mu) / (mu L/R + 1))``, measured from the wall tangent. ``length``: distance from the wall
    contact back to the previous pivot [m]; ``radius``: tube radius [m]; ``friction``: static friction coefficient.
    Uses ``atan2`` so that very short robots (``L/R < mu``) give a negative angle, i.e. always stuck.
    """
    s = float(length) / float(radius)
    return math.atan2(s - friction, friction * s + 1.0)


def boundary_pp_pat(theta_t: float, friction: float) -> float:
    """Critical collision angle separating Positive Pivot from Pivot-at-Turn (Eqs. 12-13) [rad].

    From equal critical moments at ``B`` and ``T`` (Eq. 11): ``cos(theta_t+theta_c) - mu sin(theta_t+theta_c) = 0``.
    """
    return math.atan(1.0 / friction) - theta_t


def boundary_pat_fl(theta_t: float, friction: float, l_b: float, l_a: float, radius: float) -> float:
    """Critical collision angle separating Pivot-at-Turn from Friction-Locked (Eq. 14) [rad], in ``(0, pi)``.

    Critical moment balance at ``B`` (Eq. 6, friction opposing a positive rotation) with the normal force of Eq. 10.
    """
    ratio = l_b / l_a
    num = ratio * (math.cos(theta_t) - friction * math.sin(theta_t)) + 1.0 - friction * radius / l_a
    den = ratio * (math.sin(theta_t) + friction * math.cos(theta_t)) + friction + radius / l_a
    return math.atan2(num, den)


def boundary_fl_np(theta_t: float, friction: float, l_b: float, l_a: float, radius: float) -> float:
    """Critical collision angle separating Friction-Locked from Negative Pivot (Eq. 15) [rad], in ``(0, pi)``.

    Critical moment balance at ``B`` (Eq. 6, friction opposing a negative rotation) with the normal force of Eq. 9.
    """
    ratio = l_b / l_a
    num = ratio * (math.cos(theta_t) + friction * math.sin(theta_t)) + 1.0 - friction * radius / l_a
    den = ratio * (math.sin(theta_t) - friction * math.cos(theta_t)) - friction - radius / l_a
    return math.atan2(num, den)


def classify_turn_morphology(
    theta_c: float, theta_t: float, friction: float, l_b: float, l_a: float, radius: float
) -> str:
    """Post-collision morphology of a robot with one turn (Algorithm 3, lines 3-21).

    ``theta_c``: collision angle in ``(0, pi)`` and ``theta_t > 0``: turn angle, both in the turn's rotation sense
    [rad].
    Returns one of :data:`MORPHOLOGIES`. Checked in the paper's order: pivots first, then Pivot-at-Turn, then
    Friction-Locked, so an empty Pivot-at-Turn band (``boundary_pp_pat > boundary_pat_fl``) is handled.
    """
    if l_a <= 0.0 or l_b <= 0.0:
        return "positive_pivot" if theta_c <= math.pi / 2 else "negative_pivot"
    b_pp = boundary_pp_pat(theta_t, friction)
    b_fl = boundary_pat_fl(theta_t, friction, l_b, l_a, radius)
    b_np = boundary_fl_np(theta_t, friction, l_b, l_a, radius)
    if theta_c <= b_pp:
        return "positive_pivot"
    if theta_c >= b_np:
        return "negative_pivot"
    if theta_c <= b_fl:
        return "pivot_at_turn"
    return "friction_locked"


def body_angle_to_reach(pivot: np.ndarray, dest: np.ndarray, l_b: float, theta_t: float) -> float | None:
    """Direction of the pre-turn segment when the tip of a rigidly-turned robot reaches ``dest`` (Eq. 30) [rad].

    The robot is ``pivot -> T`` (length ``l_b``, direction returned) then turns by the signed ``theta_t`` and runs
    straight to ``dest``. Law of sines in triangle ``(pivot, T, dest)``: the angle at ``dest`` is
    ``asin(l_b sin|theta_t| / L_c)`` and the exterior angle at ``T`` is ``|theta_t|``, so the pre-turn direction is the
    direction of ``dest - pivot`` rotated back by ``|theta_t| - asin(...)``. Returns ``None`` when unreachable.
    """
    d = np.asarray(dest, float) - np.asarray(pivot, float)
    l_c = math.hypot(d[0], d[1])
    if l_c <= 0.0:
        return None
    s = l_b * math.sin(abs(theta_t)) / l_c
    if s > 1.0:
        return None
    beta = abs(theta_t) - math.asin(s)
    phi = math.atan2(d[1], d[0])
    alpha = phi - math.copysign(beta, theta_t) if theta_t != 0 else phi
    # The far side of the triangle must be reachable with a positive post-turn length.
    t = np.asarray(pivot, float) + l_b * np.array([math.cos(alpha), math.sin(alpha)])
    heading = np.array([math.cos(alpha + theta_t), math.sin(alpha + theta_t)])
    if float(np.dot(np.asarray(dest, float) - t, heading)) <= 0.0:
        return None
    return alpha
