"""display() and the images of a run, called directly: magic numbers and sizes, the bounds
(8 images, 512 KiB, 8 artifacts), the frames an image is sent in, the preview fallback,
_repr_png_ and _repr_jpeg_ only for an object passed explicitly, and the import hook that
chooses the matplotlib backend (with a stand-in matplotlib package: the real one is tested
by data_test_display.py with the data venv)."""

import base64
import contextlib
import io
import json
import os
import sys
import tempfile
import textwrap
import unittest

import testimages
from replworker import display, messages
from replworker.channel import encode_frame
from replworker.limits import IMAGE_ARTIFACTS, IMAGE_BYTES, IMAGE_CHUNK, IMAGE_COUNT, MAX_FRAME

FIRED = []


def trap(*args):
    FIRED.append(args)
    raise RuntimeError('trap')


class Frames:
    """A channel that keeps the frames sent, checking each is within the frame limit."""

    def __init__(self):
        self.frames = []

    def send(self, frame):
        assert len(encode_frame(frame)) <= MAX_FRAME, len(encode_frame(frame))
        self.frames.append(frame)


class Uploads:
    """artifact() as a server with a store answers it; `fail` makes it refuse."""

    def __init__(self, fail=None):
        self.data = []
        self.fail = fail

    def __call__(self, data):
        if self.fail:
            raise self.fail
        self.data.append(data)
        return {'id': f'a-{len(self.data)}', 'size': len(data), 'format': 'binary', 'sha256': 'x',
                'lifetime': 'server', 'eviction': 'oldest-first'}


class SniffTests(unittest.TestCase):
    def test_each_format_by_its_magic_number(self):
        cases = [
            (testimages.png(33, 17), ('image/png', 33, 17)),
            (testimages.jpeg(640, 480), ('image/jpeg', 640, 480)),
            (testimages.gif(7, 300), ('image/gif', 7, 300)),
            (testimages.webp_lossless(16383, 2), ('image/webp', 16383, 2)),
            (testimages.webp_lossy(100, 50), ('image/webp', 100, 50)),
            (testimages.webp_extended(70000, 3), ('image/webp', 70000, 3)),
        ]
        for data, want in cases:
            self.assertEqual(display.sniff(data), want, data[:16])

    def test_jpeg_size_after_fill_bytes_and_restart_markers(self):
        data = testimages.jpeg(12, 34)
        data = data[:2] + b'\xff\xff\xff\xd0' + data[2:]  # fill bytes, then a marker without a length
        self.assertEqual(display.sniff(data), ('image/jpeg', 12, 34))

    def test_other_bytes_are_no_image(self):
        for data in (b'', b'hello', b'\x89PN', b'GIF90a' + b'\x00' * 10, b'RIFF\x00\x00\x00\x00WAVE', b'\xff\xd8'):
            self.assertIsNone(display.sniff(data), data)

    def test_a_known_signature_with_a_damaged_header_is_an_error(self):
        png = testimages.png(4, 4)
        cases = [
            (png[:20], 'PNG'),
            (png[:12] + b'IDAT' + png[16:], 'PNG'),
            (png[:16] + b'\x00' * 4 + png[20:], 'PNG'),  # width 0
            (b'GIF89a\x01', 'GIF'),
            (b'\xff\xd8\xff\xd9', 'JPEG'),  # ends before a frame header
            (b'\xff\xd8\xff\xe0\x00\x10JFIF', 'JPEG'),  # cut in an APP0 segment
            (b'\xff\xd8\xff\xda\x00\x08', 'JPEG'),  # a scan before any frame header
            (b'\xff\xd8\xff\xe0\x00\x04\x00\x00\x00\x00', 'JPEG'),  # no marker after a segment
            (testimages.jpeg(5, 5)[:-13], 'JPEG'),  # cut inside the frame header's width
            (b'RIFF\x00\x00\x00\x00WEBPVP8Z' + b'\x00' * 20, 'WebP'),
            (testimages.webp_lossless(3, 3)[:22], 'WebP'),
            (testimages.webp_lossy(3, 3)[:25], 'WebP'),
            (testimages.webp_lossy(0, 3), 'WebP'),
        ]
        for data, kind in cases:
            with self.assertRaises(ValueError, msg=data) as caught:
                display.sniff(data)
            self.assertEqual(str(caught.exception), messages.IMAGE_DAMAGED.format(kind))


class ImagesTestCase(unittest.TestCase):
    def setUp(self):
        self.channel = Frames()
        self.uploads = Uploads()
        self.images = display._Images(upload=self.uploads)
        self.images.start(self.channel)
        self.images.begin('run-1')
        self.stdout, self.stderr = io.StringIO(), io.StringIO()
        stack = contextlib.ExitStack()
        stack.enter_context(contextlib.redirect_stdout(self.stdout))
        stack.enter_context(contextlib.redirect_stderr(self.stderr))
        self.addCleanup(stack.close)

    def sent(self):
        """The images the frames carry: index -> (metadata, bytes), checking their order."""
        images = {}
        for frame in self.channel.frames:
            self.assertEqual((frame['type'], frame['id']), ('image', 'run-1'))
            meta, data = images.setdefault(frame['index'], ({k: frame[k] for k in ('mime', 'bytes', 'width', 'height')}, bytearray()))
            self.assertEqual(frame['offset'], len(data))
            self.assertEqual(meta, {k: frame[k] for k in ('mime', 'bytes', 'width', 'height')})
            data += base64.b64decode(frame['data'], validate=True)
        self.assertEqual(list(images), list(range(len(images))))
        return images


class BoundsTests(ImagesTestCase):
    def test_an_image_travels_in_frames_of_at_most_one_chunk(self):
        big = testimages.png(300, 300, noise=True)  # about 270 KB: two frames
        self.assertGreater(len(big), IMAGE_CHUNK)
        self.images.display(big)
        self.assertEqual([f['offset'] for f in self.channel.frames], [0, IMAGE_CHUNK])
        meta, data = self.sent()[0]
        self.assertEqual(bytes(data), big)
        self.assertEqual(meta, {'mime': 'image/png', 'bytes': len(big), 'width': 300, 'height': 300})
        self.assertEqual(self.images.end(), {'images': [meta]})

    def test_the_ninth_image_becomes_an_artifact(self):
        pngs = [testimages.png(i + 1, 1) for i in range(IMAGE_COUNT + 1)]
        self.images.display(*pngs)
        sent = self.sent()
        self.assertEqual([bytes(sent[i][1]) for i in range(IMAGE_COUNT)], pngs[:IMAGE_COUNT])
        self.assertEqual(self.uploads.data, [pngs[IMAGE_COUNT]])
        fields = self.images.end()
        self.assertEqual(len(fields['images']), IMAGE_COUNT)
        [kept] = fields['image_artifacts']
        self.assertEqual(kept['id'], 'a-1')
        self.assertEqual((kept['mime'], kept['width'], kept['height'], kept['reason']),
                         ('image/png', IMAGE_COUNT + 1, 1, messages.IMAGE_PAST_COUNT))
        self.assertEqual(self.stderr.getvalue(), '')

    def test_images_past_the_byte_budget_become_artifacts_and_smaller_ones_still_fit(self):
        first = testimages.png(300, 300, noise=True)  # 270 KB
        second = testimages.png(300, 300, noise=True)  # together past 512 KiB
        small = testimages.png(2, 2)
        self.assertGreater(len(first) + len(second), IMAGE_BYTES)
        self.images.display(first, second, small)
        self.assertEqual([bytes(d) for _, d in self.sent().values()], [first, small])
        fields = self.images.end()
        self.assertEqual([a['reason'] for a in fields['image_artifacts']], [messages.IMAGE_PAST_BYTES])
        self.assertEqual(self.uploads.data, [second])

    def test_past_the_artifact_slots_an_image_is_named_on_stderr(self):
        pngs = [testimages.png(1, 1)] * (IMAGE_COUNT + IMAGE_ARTIFACTS + 1)
        self.images.display(*pngs)
        fields = self.images.end()
        self.assertEqual((len(fields['images']), len(fields['image_artifacts'])), (IMAGE_COUNT, IMAGE_ARTIFACTS))
        note = messages.IMAGE_NOT_KEPT.format('image/png', len(pngs[0]), messages.IMAGE_PAST_COUNT, messages.IMAGE_ARTIFACTS_FULL)
        self.assertEqual(self.stderr.getvalue(), note)

    def test_a_refused_upload_is_named_on_stderr_and_the_run_goes_on(self):
        self.uploads.fail = ValueError(messages.ARTIFACT_TOO_LARGE)
        huge = testimages.png(300, 300, noise=True) * 2  # a PNG header and 540 KB
        self.images.display(huge, testimages.png(1, 1))
        fields = self.images.end()
        self.assertNotIn('image_artifacts', fields)
        self.assertEqual(len(fields['images']), 1)
        why = f'ValueError: {messages.ARTIFACT_TOO_LARGE}'
        self.assertEqual(self.stderr.getvalue(), messages.IMAGE_NOT_KEPT.format('image/png', len(huge), messages.IMAGE_PAST_BYTES, why))

    def test_no_image_between_runs(self):
        self.images.end()
        with self.assertRaises(RuntimeError) as caught:
            self.images.display(testimages.png(1, 1))
        self.assertEqual(str(caught.exception), messages.DISPLAY_NO_CELL)
        self.assertEqual(self.channel.frames, [])
        self.images.begin('run-2')
        self.assertEqual(self.images.end(), {}, 'a new run starts from nothing')


class Custom:
    __repr__ = trap
    __str__ = trap


class Pictured:
    """An object whose class defines the IPython representation methods."""

    def __init__(self, png=None, jpeg=None):
        self.png, self.jpeg = png, jpeg

    def _repr_png_(self):
        return self.png

    def _repr_jpeg_(self):
        return self.jpeg


class Raising:
    def _repr_png_(self):
        FIRED.append('_repr_png_')
        raise RuntimeError('cannot draw')

    __repr__ = trap


class Answering:
    """Answers every attribute, as mocks and proxies do: no representation method counts."""

    def __getattr__(self, name):
        FIRED.append(name)
        return lambda: testimages.png(1, 1)


class DisplayTests(ImagesTestCase):
    def setUp(self):
        super().setUp()
        FIRED.clear()

    def test_anything_else_is_its_safe_preview_on_stdout(self):
        self.images.display(Custom(), 'text', [1, None], None, b'not an image', {'k': Custom()}, [Raising()])
        self.assertEqual(self.stdout.getvalue().splitlines(), [
            '<Custom; safe preview omitted>', '"text"', '[1,null]', 'None',
            "b'not an image'", "{'k': <Custom; safe preview omitted>}",
            '[<Raising; safe preview omitted>]',
        ])
        self.assertEqual(FIRED, [], 'no user code ran')
        self.assertEqual(self.channel.frames, [])

    def test_bytes_like_images(self):
        png = testimages.png(3, 2)
        self.images.display(bytearray(png), memoryview(png), testimages.gif(2, 2), testimages.jpeg(4, 4), testimages.webp_lossless(5, 5))
        mimes = [meta['mime'] for meta, _ in self.sent().values()]
        self.assertEqual(mimes, ['image/png', 'image/png', 'image/gif', 'image/jpeg', 'image/webp'])

    def test_damaged_image_bytes_are_an_error(self):
        with self.assertRaises(ValueError) as caught:
            self.images.display(testimages.png(3, 3)[:18])
        self.assertEqual(str(caught.exception), messages.IMAGE_DAMAGED.format('PNG'))

    def test_repr_methods_of_an_explicit_argument(self):
        png, jpeg = testimages.png(6, 6), testimages.jpeg(8, 8)
        self.images.display(Pictured(png=png), Pictured(jpeg=jpeg), Pictured(png=(png, {'width': 3})),
                            Pictured(png=base64.b64encode(png).decode()))
        self.assertEqual([bytes(data) for _, data in self.sent().values()], [png, jpeg, png, png])
        self.images.display(Pictured())  # both return None: no representation, so the preview
        self.assertEqual(self.stdout.getvalue(), '<Pictured; safe preview omitted>\n')

    def test_a_raising_repr_method_raises_from_display(self):
        with self.assertRaisesRegex(RuntimeError, 'cannot draw'):
            self.images.display(Raising())
        self.assertEqual(FIRED, ['_repr_png_'])

    def test_repr_methods_that_return_no_image(self):
        with self.assertRaises(TypeError) as caught:
            self.images.display(Pictured(png=['x']))
        self.assertEqual(str(caught.exception), messages.IMAGE_REPR_NOT_BYTES.format('Pictured', '_repr_png_', 'list'))
        for bad in (b'plain bytes', 'not base64 !'):
            with self.assertRaises(ValueError) as caught:
                self.images.display(Pictured(png=bad))
            self.assertEqual(str(caught.exception), messages.IMAGE_REPR_NOT_IMAGE.format('Pictured', '_repr_png_'))

    def test_attributes_answered_by_getattr_are_not_representation_methods(self):
        self.images.display(Answering())
        self.assertEqual(FIRED, [])
        self.assertEqual(self.stdout.getvalue(), '<Answering; safe preview omitted>\n')


class MatplotlibHookTests(unittest.TestCase):
    """The hook with a stand-in matplotlib package, which records how it is imported."""

    PACKAGE = textwrap.dedent('''\
        import os
        from . import rcsetup
        class RcParams(dict):
            def __setitem__(self, key, value):
                SET.append((key, value))
                dict.__setitem__(self, key, value)
        SET = []
        rcParams = RcParams(backend=rcsetup._auto_backend_sentinel)
        if os.environ.get('FAKE_MPLBACKEND'):
            dict.__setitem__(rcParams, 'backend', os.environ['FAKE_MPLBACKEND'])
        LOADER = __loader__
        ''')

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        package = os.path.join(self.dir.name, 'matplotlib')
        os.mkdir(package)
        with open(os.path.join(package, '__init__.py'), 'w') as file:
            file.write(self.PACKAGE)
        with open(os.path.join(package, 'rcsetup.py'), 'w') as file:
            file.write('_auto_backend_sentinel = object()\n')
        self.saved = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split('.')[0] == 'matplotlib'}
        sys.path.insert(0, self.dir.name)
        self.hook = display.MatplotlibHook()
        sys.meta_path.insert(0, self.hook)
        self.addCleanup(self.restore)

    def restore(self):
        sys.meta_path.remove(self.hook)
        sys.path.remove(self.dir.name)
        for name in [name for name in sys.modules if name.split('.')[0] == 'matplotlib']:
            del sys.modules[name]
        sys.modules.update(self.saved)
        os.environ.pop('FAKE_MPLBACKEND', None)

    def test_selects_the_backend_when_none_was_chosen(self):
        import matplotlib
        self.assertEqual(matplotlib.rcParams['backend'], display.MPL_BACKEND)
        self.assertEqual(matplotlib.SET, [('backend', display.MPL_BACKEND)], 'set through rcParams, validated')
        # The real loader again, for the package and for importlib: the wrapper is gone.
        self.assertIs(matplotlib.__loader__, matplotlib.LOADER)
        self.assertIs(matplotlib.__spec__.loader, matplotlib.LOADER)
        self.assertNotIsInstance(matplotlib.__loader__, display._SelectAfterExec)
        import matplotlib.rcsetup  # submodules are not the hook's business
        self.assertEqual(matplotlib.SET, [('backend', display.MPL_BACKEND)])

    def test_leaves_a_chosen_backend_alone(self):
        os.environ['FAKE_MPLBACKEND'] = 'Agg'
        import matplotlib
        self.assertEqual((matplotlib.rcParams['backend'], matplotlib.SET), ('Agg', []))

    def test_backend_constants(self):
        self.assertEqual(display.MPL_BACKEND, 'module://' + display.BACKEND_MODULE)
        self.assertTrue(display.BACKEND_MODULE.endswith('.mplbackend'))
        self.assertEqual(json.loads(json.dumps(display.MPL_BACKEND)), display.MPL_BACKEND)


if __name__ == '__main__':
    unittest.main()
