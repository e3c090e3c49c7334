# The tests import the package and the scripts of train/ (dory, train, data) and the
# helpers beside them, whichever directory pytest is started from or ini it finds.
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
