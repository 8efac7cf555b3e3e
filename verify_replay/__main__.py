"""``python -m verify_replay W.json [--dps D]``: the independent replay (:func:`verify_replay.main`)."""

import sys

from verify_replay import main

sys.exit(main())
