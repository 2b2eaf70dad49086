"""`python -m keras_attention`: the `keras-attention` command (`keras_attention.cli`)."""

import sys

from keras_attention.cli import main

sys.exit(main())
