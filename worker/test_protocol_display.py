"""Images through the real worker (PROTOCOL.md, Images): display() in a cell sends `image`
frames before the result, which lists their metadata; past the bounds an image is uploaded
as an artifact through the artifact rpcs; what a cell displayed before it raised stays; and
the matplotlib hook costs a worker's start nothing. The test plays the server: it assembles
the frames and answers the artifact rpcs as a store would."""

import base64
import hashlib

import testimages
from harness import CHUNK, WorkerTestCase
from replworker.limits import DISPLAY_COUNT, IMAGE_CHUNK, IMAGE_COUNT
from replworker.messages import IMAGE_PAST_BYTES, IMAGE_PAST_COUNT

# The cells make their images with this: testimages' PNG writer, sent as cell code.
with open(testimages.__file__, encoding='utf-8') as _file:
    MAKE_IMAGES = _file.read().split('"""', 2)[2]


class ServedRun:
    """What a run sent, with the server's side played: the images its frames carried
    (index -> (metadata, bytes)), the artifacts it uploaded (bytes), its result."""

    def __init__(self, case, run_id):
        self.images, self.uploads, self.outputs = {}, [], []
        worker = case.worker
        upload = None
        while True:
            frame = worker.next_frame()
            case.assertEqual(frame.get('run_id', frame['id']), run_id, frame)
            kind = frame['type']
            if kind == 'result':
                case.assertEqual(frame['id'], run_id)
                self.result = frame['result']
                break
            if kind == 'output':
                self.outputs.append(frame)
            elif kind == 'image':
                meta = {key: frame[key] for key in ('mime', 'bytes', 'width', 'height')}
                got, data = self.images.setdefault(frame['index'], (meta, bytearray()))
                case.assertEqual((got, frame['offset']), (meta, len(data)), 'chunks in order, one image at a time')
                case.assertEqual(list(self.images)[-1], frame['index'], 'images in order')
                chunk = base64.b64decode(frame['data'], validate=True)
                case.assertTrue(0 < len(chunk) <= IMAGE_CHUNK)
                data += chunk
            elif kind == 'rpc' and frame['op'] == 'artifact.begin':
                case.assertEqual(frame['params'], {'format': 'binary'})
                upload = bytearray()
                worker.reply(frame['id'], {'upload_id': 'u', 'chunk_bytes': CHUNK, 'max_bytes': 16_777_216})
            elif kind == 'rpc' and frame['op'] == 'artifact.append':
                upload += base64.b64decode(frame['data'], validate=True)
                worker.reply(frame['id'], {'upload_id': 'u', 'size': len(upload)})
            elif kind == 'rpc' and frame['op'] == 'artifact.commit':
                self.uploads.append(bytes(upload))
                worker.reply(frame['id'], {
                    'id': f'a-{len(self.uploads)}', 'size': len(upload), 'format': 'binary',
                    'sha256': hashlib.sha256(upload).hexdigest(), 'lifetime': 'server', 'eviction': 'oldest-first',
                })
            else:
                case.fail(f'unexpected frame {frame}')
        for meta, data in self.images.values():
            case.assertEqual(len(data), meta['bytes'], 'every image complete before the result')

    def sent(self):
        return [bytes(data) for _, data in self.images.values()]


class DisplayTests(WorkerTestCase):
    def serve(self, code):
        return ServedRun(self, self.worker.start(MAKE_IMAGES + '\n' + code))

    def test_images_travel_before_the_result_which_lists_them(self):
        run = self.serve('big = png(300, 300, noise=True)\ndisplay(png(2, 3), gif(4, 5), big)\nlen(big)')
        self.assert_ok(run.result)
        big = run.result['value']
        self.assertEqual(run.result['images'], [
            {'mime': 'image/png', 'bytes': len(testimages.png(2, 3)), 'width': 2, 'height': 3},
            {'mime': 'image/gif', 'bytes': len(testimages.gif(4, 5)), 'width': 4, 'height': 5},
            {'mime': 'image/png', 'bytes': big, 'width': 300, 'height': 300},
        ])
        self.assertEqual(run.sent()[:2], [testimages.png(2, 3), testimages.gif(4, 5)])
        self.assertEqual(run.sent()[2][:8], b'\x89PNG\r\n\x1a\n')
        self.assertNotIn('image_artifacts', run.result)
        # The next run starts with no images, and a run without images has no such fields.
        run = self.serve('1')
        self.assertEqual((run.images, 'images' in run.result, 'image_artifacts' in run.result), ({}, False, False))

    def test_the_ninth_image_and_an_oversized_one_become_artifacts(self):
        run = self.serve(f'display(png(500, 500, noise=True))\nfor i in range({IMAGE_COUNT + 1}):\n    display(png(i + 1, 1))')
        self.assert_ok(run.result)
        self.assertEqual([m['width'] for m in run.result['images']], list(range(1, IMAGE_COUNT + 1)))
        large, ninth = run.result['image_artifacts']
        self.assertEqual([large['reason'], ninth['reason']], [IMAGE_PAST_BYTES, IMAGE_PAST_COUNT])
        self.assertEqual([large['id'], large['width'], large['mime'], ninth['id'], ninth['width']], ['a-1', 500, 'image/png', 'a-2', IMAGE_COUNT + 1])
        self.assertEqual((large['size'], large['sha256']), (len(run.uploads[0]), hashlib.sha256(run.uploads[0]).hexdigest()))
        self.assertEqual(run.uploads[0][:8], b'\x89PNG\r\n\x1a\n')
        self.assertEqual(run.uploads[1], testimages.png(IMAGE_COUNT + 1, 1))

    def test_images_shown_before_an_exception_stay(self):
        run = self.serve('display(png(7, 7))\n1 / 0')
        self.assertFalse(run.result['success'])
        self.assertIn('ZeroDivisionError', run.result['error'])
        self.assertEqual(run.sent(), [testimages.png(7, 7)])
        self.assertEqual(len(run.result['images']), 1)

    def test_threads_of_the_cell_show_images_in_it(self):
        code = ('import threading\n'
                'threads = [threading.Thread(target=display, args=(png(i + 1, 2),)) for i in range(4)]\n'
                'for t in threads: t.start()\n'
                'for t in threads: t.join()\n')
        run = self.serve(code)
        self.assert_ok(run.result)
        self.assertEqual(sorted(m['width'] for m in run.result['images']), [1, 2, 3, 4])

    def test_preview_of_other_values_and_errors(self):
        run = self.serve('class C:\n    def __repr__(self):\n        raise RuntimeError("repr ran")\n'
                         'display(C(), "x", b"\\x89PNG\\r\\n\\x1a\\n")')
        self.assertFalse(run.result['success'])
        self.assertEqual(run.result['stdout'], '<C; safe preview omitted>\n"x"\n')
        self.assertIn('ValueError: display(): the bytes start like PNG but the header is damaged', run.result['error'])
        self.assertEqual(run.images, {})
        self.assertEqual(run.result['displays'], [{'text': '<C; safe preview omitted>'}, {'text': '"x"', 'repr': "'x'"}])

    def test_displays_of_other_values_are_kept_for_the_notebook_within_bounds(self):
        run = self.serve(f'display({{"a": (1, 2)}}, 7)\nfor i in range({DISPLAY_COUNT + 4}):\n    display(i)')
        self.assert_ok(run.result)
        displays = run.result['displays']
        self.assertEqual(displays[:3], [{'text': '{"a":[1,2]}', 'repr': "{'a': (1, 2)}"}, {'text': '7'}, {'text': '0'}])
        self.assertEqual(len(displays), DISPLAY_COUNT)
        self.assertEqual(run.result['stdout'].count('\n'), DISPLAY_COUNT + 6, 'every display is printed still')
        # The next run starts with none.
        self.assertNotIn('displays', self.serve('1').result)


class StartTests(WorkerTestCase):
    def test_the_matplotlib_hook_imports_nothing(self):
        value = self.worker.value('import sys\n[name for name in sys.modules if name.split(".")[0] in ("matplotlib", "PIL")]')
        self.assertEqual(value, [])
        value = self.worker.value('import sys\n[type(f).__name__ for f in sys.meta_path[:2]]')
        self.assertEqual(value, ['_Package', 'MatplotlibHook'])
        self.assertEqual(self.worker.value('"display" in dir() and callable(display)'), True)
        self.assertNotIn('mplbackend', self.worker.value('import sys\n" ".join(sys.modules)'))
