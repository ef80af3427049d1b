import os

from hypothesis import settings

# The machine is shared and noisy; compiled tests must not flake on deadlines.
settings.register_profile("jaxlite", deadline=None, max_examples=30, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "jaxlite"))
