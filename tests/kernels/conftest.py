import os
import sys

# slow_impl.py and sass.py live next to the tests; make them importable without a tests package.
sys.path.insert(0, os.path.dirname(__file__))
