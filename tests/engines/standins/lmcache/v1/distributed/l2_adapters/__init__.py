from . import plugin_l2_adapter  # noqa: F401  (LMCache discovers its adapter modules)
