"""Readable reference of the sparse online L1-ball projection (Duchi et al. 2008, Section 6 and
Figure 3), in plain Python over a ``sortedcontainers.SortedList``; the compiled heap version
(``streamlearn.core.online_projection``) is tested against it.

Non-zero weights are kept un-shifted: w_i = sign(s_i) (|s_i| - Theta), keys |s_i| in a sorted list.
After a step the pivot search of Figure 3 runs over the keys from the largest down: a key v is not
smaller than the pivot while the sum of the keys >= v minus their number times v is below z
(Eq. 11; Theta cancels, so the keys need not be shifted). The smallest such key gives rho and the
sum s, theta = (s - rho Theta - z) / rho (Eq. 10), Theta grows by theta and the keys at or below the
new Theta are split off (Tarjan's split: here one bisection and a slice deletion).

This walk is O(rho) instead of the tree's O(log n): it is the specification, not the fast path.
"""

from __future__ import annotations

from sortedcontainers import SortedList


class TreeProjection:
    def __init__(self, z: float):
        self.z = float(z)
        self.theta = 0.0                 # cumulative shift Theta
        self.stored: dict[int, float] = {}
        self.keys = SortedList()         # (|s_i|, i)

    def weight(self, i: int) -> float:
        s = self.stored.get(i, 0.0)
        return (abs(s) - self.theta) * (1.0 if s > 0 else -1.0) if s else 0.0

    def _set(self, i: int, w: float) -> None:
        s = self.stored.pop(i, 0.0)
        if s:
            self.keys.remove((abs(s), i))
        if w != 0.0:
            key = abs(w) + self.theta
            self.stored[i] = key if w > 0 else -key
            self.keys.add((key, i))

    def pivot_search(self):
        """Figure 3 over the sorted keys: (rho, s) of the smallest key not below the pivot."""
        rho, s = 0, 0.0
        best = (0, 0.0)
        for key, _ in reversed(self.keys):
            rho_hat, s_hat = rho + 1, s + key
            if s_hat < key * rho_hat + self.z:        # key >= pivot
                best = (rho_hat, s_hat)
                rho, s = rho_hat, s_hat
            else:
                break
        return best

    def step(self, updates) -> float:
        """Add each (i, delta) to w_i (repeats add up), then project. Returns the theta applied."""
        for i, d in updates:
            self._set(i, self.weight(i) + d)
        if sum(k for k, _ in self.keys) - len(self.keys) * self.theta <= self.z:
            return 0.0
        rho, s = self.pivot_search()
        theta = (s - rho * self.theta - self.z) / rho
        self.theta += theta
        cut = self.keys.bisect_right((self.theta, float("inf")))
        for key, i in list(self.keys[:cut]):
            del self.stored[i]
        del self.keys[:cut]
        return theta
