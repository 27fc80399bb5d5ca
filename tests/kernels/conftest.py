import os
import sys

# slow_impl.py lives next to the tests; make it importable without a tests package.
sys.path.insert(0, os.path.dirname(__file__))
