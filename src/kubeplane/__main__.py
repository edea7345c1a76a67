import sys

from kubeplane.cmd.main import main

sys.exit(main())
