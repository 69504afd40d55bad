"""The entry points of a run, kept in one place for the CLI and the Python API: ``prepare_train``,
``train`` and ``predict``.

The work is split by concern: ``streamlearn.run.stream`` (text sources -> parsed blocks, the parsing
pipeline), ``streamlearn.run.session`` (a run: the online train and the predict flows),
``streamlearn.run.model_io`` (restoring -i models, writing -f / --readable-model) and
``streamlearn.run.scd_run`` (the batch flow of --algo scd). ``train`` picks the flow of the learner.
"""

from __future__ import annotations

from streamlearn._cache import install_kernel_loader, install_lazy_caches

install_lazy_caches()   # before the kernel modules are imported: their numba caches are built on first call
from streamlearn import learners  # noqa: E402
from streamlearn.run import session  # noqa: E402
from streamlearn.config import TrainConfig  # noqa: E402
from streamlearn.run.session import predict, prepare_train  # noqa: F401 (entry points, re-exported)

# cached kernels load without numba's registry set-up; a first compilation tells the user (stderr)
install_kernel_loader()


def train(cfg: TrainConfig, model=None) -> dict:
    """Train as configured (the online session, or the batch flow of a batch learner). Returns a small
    dict of results (for tests and the Python API)."""
    batch = learners.get(cfg.algo).batch and not cfg.testonly
    if cfg.extra_metrics and (cfg.audit_regressor or batch):
        from streamlearn.errors import OptionError
        raise OptionError(f"--extra_metrics is not available with "
                          f"{'--audit_regressor' if cfg.audit_regressor else '--algo ' + cfg.algo} "
                          f"(VW's learn and predict calls are those of an online run)")
    if cfg.audit_regressor:
        from streamlearn.run import audit_regressor   # imported by the runs that use it
        return audit_regressor.run(cfg, model)
    if batch:   # -t learns nothing: the online session predicts
        import importlib    # the batch flow (scd_run, bfgs_run): imported by the runs that use it
        module, function = learners.get(cfg.algo).flow.split(":")
        return getattr(importlib.import_module(module), function)(cfg, model)
    observer = None
    if cfg.trace:
        from streamlearn.run.trace import observe as observer   # --trace: imported by the runs that use it
    return session.train(cfg, model, observer=observer)
