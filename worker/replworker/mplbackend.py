"""The worker's matplotlib backend, `module://<repl-mcp worker>.mplbackend`, which
display.py selects when matplotlib is imported and nobody chose a backend (docs/contract.md
§7.9). Figures draw with Agg. plt.show() and Figure.show() show them as PNG images of the
running run and close them, as Jupyter's inline backend does; the figures still open when
a run ends are shown and closed by the worker (display.py, show_figures and close_figures).

matplotlib imports this module when pyplot first needs its backend, through the bootstrap's
finder (module:// names go to importlib.import_module), so its imports of matplotlib never
run at the worker's start: worker.Imports leaves this file out of the cold-start floor."""

import itertools

from matplotlib._pylab_helpers import Gcf
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from .display import IMAGES

_created = itertools.count()  # creation order of the managers, which Gcf does not keep


class FigureManagerRepl(FigureManagerBase):
    """A figure pyplot manages: shown once, as an image, then closed."""

    def __init__(self, canvas, num):
        super().__init__(canvas, num)
        self.created = next(_created)

    def show(self):
        """Figure.show(): this figure as an image of the running run; then it is closed."""
        try:
            IMAGES.show_figure(self.canvas.figure)
        finally:
            Gcf.destroy(self)

    @classmethod
    def pyplot_show(cls, *, block=None):
        """plt.show(): every open figure, oldest first, each then closed; `block` means
        nothing without a window."""
        for manager in open_managers():
            manager.show()


class FigureCanvasRepl(FigureCanvasAgg):
    manager_class = FigureManagerRepl


# What matplotlib looks up in a backend module (FigureManager for versions before 3.6).
FigureCanvas = FigureCanvasRepl
FigureManager = FigureManagerRepl


def open_managers():
    """The open figures of this backend, oldest first."""
    managers = [m for m in Gcf.get_all_fig_managers() if isinstance(m, FigureManagerRepl)]
    return sorted(managers, key=lambda manager: manager.created)


def close_all():
    for manager in open_managers():
        Gcf.destroy(manager)
