"""A stage of the fitting chain (fitting.py) that calls nothing of
stagebench: campaign-plain.toml names the functions to time.

Usage: plain.py STAGE SCRATCH
"""

import sys

import fitting

if __name__ == "__main__":
    fitting.main(sys.argv[1:])
