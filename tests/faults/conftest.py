"""The fault harness's tools (tools/faults) are scripts, not a package:
put their folder on sys.path so that the tests import them by name."""
import os
import sys

sys.path.insert(0, os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tools',
    'faults'))
