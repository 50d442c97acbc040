# SPDX-License-Identifier: GPL-2.0
#
# Sphinx configuration of Documentation/: "make docs" builds it into
# build/docs/html, with warnings as errors.
#
# The kernel-doc directive (the uapi header's comments, the driver's lock
# order) is the kernel's own Sphinx extension, kerneldoc.py, which runs the
# kernel's scripts/kernel-doc.  Neither is kept in this tree: "make docs"
# first runs "tools/gps-kernel sphinx", which extracts them from Debian's
# linux-source-6.12 into build/sphinx.  GPS_SPHINX_DIR names another
# directory holding kerneldoc.py, kernellog.py and kernel-doc.

import os
import sys

from sphinx.errors import ConfigError

top = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
kernel_sphinx = os.environ.get('GPS_SPHINX_DIR',
                               os.path.join(top, 'build', 'sphinx'))
if not os.path.isfile(os.path.join(kernel_sphinx, 'kerneldoc.py')):
    raise ConfigError('%s: no kerneldoc.py (run tools/gps-kernel sphinx)'
                      % kernel_sphinx)
sys.path.insert(0, kernel_sphinx)

project = 'gps'
author = 'the gps authors'

extensions = ['kerneldoc']

# kernel-doc paths in the directives are relative to the top of the tree
kerneldoc_bin = os.path.join(kernel_sphinx, 'kernel-doc')
kerneldoc_srctree = top

root_doc = 'index'
source_suffix = '.rst'
exclude_patterns = []

# as the kernel's conf.py: the structures and functions are C, and literal
# blocks (shell commands, lock trees, console output) are not highlighted
primary_domain = 'c'
highlight_language = 'none'

html_theme = 'alabaster'
html_title = 'gps documentation'
html_static_path = []
