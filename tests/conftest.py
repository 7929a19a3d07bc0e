# The fixtures also arrive through the pytest11 entry point once localmem is
# installed; importing them here makes the suite run from a plain checkout too.
from localmem.pytest_plugin import FIXED_NOW, memory_store, memory_store_factory  # noqa: F401
