"""The package's version, in a module of its own: the package, the CLI, the model writer and the
kernel-cache guard read it without importing one another."""

__version__ = "0.1.0"
