"""matplotlib and PIL through the real worker, with the real libraries: the backend chosen
when matplotlib is imported (and resolved through the worker's private package), plt.show()
and the figures left open at the end of a cell as PNG images, closed afterwards, a user's
own backend left alone, PIL images saved by PIL. It needs the data venv (make data-deps), so
TestWorkerDataLibraries runs it there only: its name keeps it out of the suite the other
interpreters run."""

import io
import os
import signal
import tempfile
import unittest

from PIL import Image

from harness import WorkerProcess, WorkerTestCase
from replworker.messages import FIGURE_FAILED, IMAGE_PAST_BYTES
from test_protocol_display import ServedRun

BACKEND = 'module://<repl-mcp worker>.mplbackend'


def pixel(png, x=5, y=5):
    """The RGB colour of one pixel of PNG bytes, decoded by PIL."""
    with Image.open(io.BytesIO(png)) as image:
        return image.convert('RGB').getpixel((x, y))


class FigureTests(WorkerTestCase):
    def serve(self, code):
        return ServedRun(self, self.worker.start(code))

    def test_the_backend_is_chosen_when_matplotlib_is_imported(self):
        value = self.worker.value('import sys\n"matplotlib" in sys.modules')
        self.assertEqual(value, False, 'the worker starts without matplotlib')
        value = self.worker.value('import matplotlib, sys\n[matplotlib.rcParams._get("backend"), "matplotlib.pyplot" in sys.modules]')
        self.assertEqual(value, [BACKEND, False])
        code = 'import matplotlib.pyplot as plt\nfig = plt.figure()\n[plt.get_backend(), type(fig.canvas).__module__]'
        self.assertEqual(self.worker.value(code), [BACKEND, '<repl-mcp worker>.mplbackend'])

    def test_plt_show_returns_one_png_and_closes_the_figure(self):
        run = self.serve('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [3, 1, 2])\nplt.show()\nplt.get_fignums()')
        self.assert_ok(run.result)
        self.assertEqual(run.result['value'], [])
        [png] = run.sent()
        self.assertEqual(png[:8], b'\x89PNG\r\n\x1a\n')
        with Image.open(io.BytesIO(png)) as image:
            width, height = image.size
        self.assertEqual(run.result['images'], [{'mime': 'image/png', 'bytes': len(png), 'width': width, 'height': height}])
        self.assertTrue(width < 640 and height < 480, 'cropped to what is drawn, as Jupyter saves it')
        self.assertEqual(self.serve('plt.get_fignums()').images, {}, 'nothing shown again')

    def test_figures_are_saved_tight_so_nothing_drawn_is_cut_off(self):
        # Text below the figure's bottom edge (an x label pushed out by a large font does the
        # same): bbox_inches="tight" grows the image to hold it, as Jupyter's inline backend
        # does, where a plain savefig cuts it off at 640x480.
        code = ('import matplotlib.pyplot as plt\nfig = plt.figure()\nplt.plot([1, 2])\n'
                'fig.text(0.5, -0.3, "BELOW", fontsize=40, color=(1, 0, 0))\nplt.show()')
        run = self.serve(code)
        self.assert_ok(run.result)
        [png] = run.sent()
        with Image.open(io.BytesIO(png)) as image:
            rgb = image.convert('RGB')
            width, height = rgb.size
            bottom = [rgb.getpixel((x, y)) for y in range(height * 4 // 5, height) for x in range(width)]
        self.assertGreater(height, 480, 'the image holds the text below the axes')
        self.assertIn((255, 0, 0), bottom, 'the red text is drawn near the bottom of the image')

    def test_figures_left_open_are_shown_oldest_first_then_closed(self):
        code = ('import matplotlib.pyplot as plt\n'
                'red = plt.figure(facecolor="red")\nblue = plt.figure(facecolor="blue")\n'
                'plt.figure(red.number)\n'  # made active again: still the older one
                'green = plt.figure(facecolor="green")\n'
                'display(green)\n'  # shown now, and not again at the end
                '"done"')
        run = self.serve(code)
        self.assert_ok(run.result)
        self.assertEqual([pixel(png) for png in run.sent()], [(0, 128, 0), (255, 0, 0), (0, 0, 255)])
        self.assertEqual(self.worker.value('plt.get_fignums()'), [])
        run = self.serve('fig = plt.figure(facecolor="red")\nfig.show()\nplt.get_fignums()')
        self.assertEqual((run.result['value'], len(run.sent())), ([], 1))

    def test_a_figure_that_cannot_be_drawn_is_named_and_closed(self):
        run = self.serve('import matplotlib.pyplot as plt\nplt.figure()\nplt.title(r"$\\notacommand$")\n"still fine"')
        self.assert_ok(run.result)
        self.assertEqual(run.result['value'], 'still fine')
        self.assertEqual(run.images, {})
        self.assertTrue(run.result['stderr'].startswith(FIGURE_FAILED.format(1, 'ValueError: ')[:-1]), run.result['stderr'])
        self.assertEqual(self.worker.value('plt.get_fignums()'), [])

    def test_a_figure_too_large_to_show_becomes_an_artifact(self):
        code = ('import matplotlib.pyplot as plt, numpy\n'
                'plt.figure(figsize=(10, 10))\nplt.imshow(numpy.random.default_rng(1).random((1000, 1000)))\nplt.show()')
        run = self.serve(code)
        self.assert_ok(run.result)
        self.assertNotIn('images', run.result)
        [kept] = run.result['image_artifacts']
        self.assertEqual((kept['mime'], kept['reason']), ('image/png', IMAGE_PAST_BYTES))
        self.assertEqual(kept['size'], len(run.uploads[0]))
        with Image.open(io.BytesIO(run.uploads[0])) as image:
            self.assertEqual(image.size, (kept['width'], kept['height']))
        self.assertGreater(kept['width'] * kept['height'], 500 * 500)

    def test_an_interrupted_cell_shows_nothing_and_closes_its_figures(self):
        run_id = self.worker.start('import matplotlib.pyplot as plt, time\nplt.plot([1, 2])\nprint("drawn", flush=True)\ntime.sleep(30)')
        self.worker.wait_for_output(run_id, 'drawn')
        os.kill(self.worker.proc.pid, signal.SIGINT)
        run = ServedRun(self, run_id)
        self.assertIn('interrupted', run.result['error'])
        self.assertEqual((run.images, run.uploads), ({}, []))
        self.assertEqual(self.worker.value('plt.get_fignums()'), [])

    def test_pil_images_are_saved_by_pil(self):
        code = ('from PIL import Image\n'
                'display(Image.new("RGB", (30, 20), (10, 20, 30)), Image.new("CMYK", (4, 4), (0, 255, 0, 0)), Image.new("LA", (3, 3)))')
        run = self.serve(code)
        self.assert_ok(run.result)
        rgb, cmyk, la = run.sent()
        self.assertEqual([(m['width'], m['height']) for m in run.result['images']], [(30, 20), (4, 4), (3, 3)])
        self.assertEqual(pixel(rgb), (10, 20, 30))
        self.assertEqual(pixel(cmyk, 0, 0), (255, 0, 255), 'CMYK converted to RGB by PIL')
        with Image.open(io.BytesIO(la)) as image:
            self.assertEqual(image.mode, 'LA')

    def test_numpy_and_pandas_values_are_previews(self):
        run = self.serve('import numpy\ndisplay(numpy.arange(3))')
        self.assertTrue(run.result['stdout'].startswith('array([0, 1, 2]'), run.result['stdout'])
        self.assertEqual(run.images, {}, 'an array is no image')


class UserBackendTests(WorkerTestCase):
    """A backend the user chose is left alone: nothing is shown and nothing closed."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.dir = self.tmp.name

    def start(self, **env):
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        try:
            self.worker = WorkerProcess(self.dir)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key)
                else:
                    os.environ[key] = value
        self.addCleanup(self.worker.close)

    def assert_left_alone(self, backend):
        run = ServedRun(self, self.worker.start('import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\n[plt.get_backend(), plt.get_fignums()]'))
        self.assert_ok(run.result)
        self.assertEqual(run.result['value'], [backend, [1]])
        self.assertEqual((run.images, 'images' in run.result), ({}, False))
        self.assertEqual(self.worker.value('plt.get_fignums()'), [1], 'the user closes their own figures')

    def test_mplbackend(self):
        self.start(MPLBACKEND='Agg')
        self.assert_left_alone('Agg')

    def test_matplotlibrc(self):
        with open(os.path.join(self.dir, 'matplotlibrc'), 'w') as file:
            file.write('backend: agg\n')
        self.start()
        self.assert_left_alone('agg')

    def test_matplotlib_use(self):
        self.start()
        self.assert_ok(self.worker.run('import matplotlib\nmatplotlib.use("agg")'))
        self.assert_left_alone('agg')


if __name__ == '__main__':
    unittest.main()
