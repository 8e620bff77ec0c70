#!/usr/bin/python3
"""The fluid solver's method in NumPy/SciPy: the peer of bench_fluid's step time.

The same algorithm as solvers/fluid (docs/fluid-validation.md): the Taylor-Green vortex on a periodic
n^3 grid, rotational form u x omega, 2/3-rule dealiasing (|k_d| <= (n - 1) / 3, Nyquist modes dropped),
projection onto divergence-free fields, classical RK4 with the integrating factor exp(-nu k^2 t), a fixed
step. Transforms with scipy.fft.rfftn / irfftn on --workers threads.

  bench/fluid_scipy.py [--n 64] [--steps 5] [--dt 0.01] [--viscosity 0.000625] [--workers 2] [--json FILE]

Prints the seconds per RK4 step (median of the timed steps, after one untimed step) and the kinetic
energy 1/2 <|u|^2> after every step, so that a run of spotrun with the same settings can be checked
against it (tests/fluid.cmake: fluid.scipy_peer). Needs Debian's python3-numpy and python3-scipy.
"""
import argparse
import json
import statistics
import sys
import time

try:
    import numpy as np
    import scipy.fft as sfft
except ImportError as e:  # pragma: no cover - reported to the user
    sys.exit(f"fluid_scipy.py: {e}; install Debian's python3-numpy and python3-scipy (and run /usr/bin/python3)")


class Solver:
    def __init__(self, n, nu, workers):
        self.n, self.nu, self.workers = n, nu, workers
        k = np.fft.fftfreq(n, 1.0 / n)
        k[n // 2] = 0.0 if n % 2 == 0 else k[n // 2]  # the Nyquist derivative is zero
        kz = np.arange(n // 2 + 1, dtype=float)
        if n % 2 == 0:
            kz[n // 2] = 0.0
        self.kx, self.ky, self.kz = np.meshgrid(k, k, kz, indexing="ij", sparse=True)
        self.kk = self.kx ** 2 + self.ky ** 2 + self.kz ** 2
        self.inv_kk = np.where(self.kk > 0, 1.0 / np.where(self.kk > 0, self.kk, 1.0), 0.0)
        kmax = (n - 1) // 3
        s = np.fft.fftfreq(n, 1.0 / n).astype(int)
        keep1 = (np.abs(s) <= kmax) & (np.arange(n) * 2 != n)
        sz = np.arange(n // 2 + 1)
        keepz = (sz <= kmax) & (sz * 2 != n)
        self.keep = keep1[:, None, None] & keep1[None, :, None] & keepz[None, None, :]
        self.mask = self.keep.astype(float)
        self.nonmean = self.mask * (self.kk > 0)

    def fft(self, u):
        return sfft.rfftn(u, axes=(1, 2, 3), workers=self.workers) / self.n ** 3

    def ifft(self, uh):
        return sfft.irfftn(uh * self.n ** 3, s=(self.n,) * 3, axes=(1, 2, 3), workers=self.workers)

    def project(self, a):
        ka = (self.kx * a[0] + self.ky * a[1] + self.kz * a[2]) * self.inv_kk
        return np.stack([a[0] - self.kx * ka, a[1] - self.ky * ka, a[2] - self.kz * ka])

    def curl(self, a):
        return 1j * np.stack([self.ky * a[2] - self.kz * a[1], self.kz * a[0] - self.kx * a[2],
                              self.kx * a[1] - self.ky * a[0]])

    def nonlinear(self, uh):
        u = self.ifft(uh)
        w = self.ifft(self.curl(uh))
        lamb = np.stack([u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2], u[0] * w[1] - u[1] * w[0]])
        return self.project(self.fft(lamb) * self.nonmean)

    def step(self, uh, h):
        eh = np.exp(-self.nu * self.kk * h / 2)
        e = eh * eh
        n1 = self.nonlinear(uh)
        acc = e * (uh + h / 6 * n1)
        n2 = self.nonlinear(eh * (uh + h / 2 * n1))
        acc += h / 3 * eh * n2
        n3 = self.nonlinear(eh * uh + h / 2 * n2)
        acc += h / 3 * eh * n3
        n4 = self.nonlinear(e * uh + h * eh * n3)
        return acc + h / 6 * n4

    def energy(self, uh):
        w = np.full(uh.shape[1:], 2.0)  # modes with 0 < kz < n/2 stand for their conjugates too
        w[:, :, 0] = 1.0
        if self.n % 2 == 0:
            w[:, :, -1] = 1.0
        return 0.5 * float(np.sum(w * (np.abs(uh) ** 2).sum(axis=0)))


def taylor_green(n):
    x = 2 * np.pi * np.arange(n) / n
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    return np.stack([np.sin(X) * np.cos(Y) * np.cos(Z), -np.cos(X) * np.sin(Y) * np.cos(Z), np.zeros_like(X)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--dt", type=float, default=0.01)
    ap.add_argument("--viscosity", type=float, default=0.000625)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.n < 4 or a.steps < 1 or not a.dt > 0 or a.viscosity < 0 or a.workers < 1:
        ap.error("need --n >= 4, --steps >= 1, --dt > 0, --viscosity >= 0, --workers >= 1")
    s = Solver(a.n, a.viscosity, a.workers)
    uh = s.project(s.fft(taylor_green(a.n)) * s.mask)
    energies = [s.energy(uh)]
    times = []
    for i in range(a.steps + 1):
        t0 = time.perf_counter()
        uh = s.step(uh, a.dt)
        if i > 0:
            times.append(time.perf_counter() - t0)
        energies.append(s.energy(uh))
    per_step = statistics.median(times) if times else float("nan")
    print(f"scipy pseudo-spectral RK4, n = {a.n}, workers = {a.workers}: {per_step:.6g} s per step "
          f"(median of {len(times)})")
    for i, e in enumerate(energies):
        print(f"step {i} energy {e:.15e}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"n": a.n, "workers": a.workers, "dt": a.dt, "viscosity": a.viscosity,
                       "seconds_per_step": per_step, "energies": energies}, f, indent=1)


if __name__ == "__main__":
    main()
