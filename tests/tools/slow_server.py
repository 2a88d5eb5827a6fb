"""A file server for carton's tests: serves the files of a directory on
127.0.0.1, sending at most the bytes per second written in ROOT/.rate (read
again for every chunk, so a test can change it while the server runs; 0 or
absent means unlimited), logs every request's path, Range and If-Range
headers to LOG (one tab-separated line each), and prints its port.

Usage: slow_server.py ROOT LOG range|norange|badrange|changing
  range    answers one range ("bytes=A-B", "bytes=A-", "bytes=-N") with 206
           and Content-Range (honouring If-Range against its ETag)
  norange  ignores Range and always answers 200 with the whole file
  badrange answers any Range with 206, "Content-Range: bytes 0-LAST/SIZE"
           and the whole file (a wrong answer to any range but the first
           byte on)
  changing as range, but every answer carries a new ETag (the file changes
           between requests) and If-Range is not looked at
"""
import http.server
import os
import sys
import threading
import time

root, log_path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
log_lock = threading.Lock()
CHUNK = 16 * 1024
requests = [0]


def rate():
    try:
        with open(os.path.join(root, '.rate')) as f:
            return int(f.read().strip() or '0')
    except (OSError, ValueError):
        return 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.serve(head=False)

    def do_HEAD(self):
        self.serve(head=True)

    def serve(self, head):
        range_header = self.headers.get('Range')
        if_range = self.headers.get('If-Range')
        with log_lock, open(log_path, 'a') as log:
            log.write('%s\t%s\t%s\n' % (self.path, range_header or '-', if_range or '-'))
        path = os.path.join(root, self.path.lstrip('/'))
        if not os.path.isfile(path):
            self.send_response(404)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        st = os.stat(path)
        size = st.st_size
        etag = '"%x-%x"' % (size, int(st.st_mtime))
        if mode == 'changing':
            with log_lock:
                requests[0] += 1
                etag = '"%x-%x-%d"' % (size, int(st.st_mtime), requests[0])
        start, end, ranged = 0, size, False
        if mode == 'badrange' and range_header:
            # 206 with the whole file and a Content-Range that says so,
            # whatever was asked for.
            start, end, ranged = 0, size, True
        elif mode in ('range', 'changing') and range_header and range_header.startswith('bytes='):
            first, _, last = range_header[6:].partition('-')
            if if_range is None or if_range == etag or mode == 'changing':
                if first.isdigit() and (last == '' or last.isdigit()):
                    start, ranged = int(first), True
                    if last:
                        end = min(int(last) + 1, size)
                elif first == '' and last.isdigit():
                    start, ranged = max(size - int(last), 0), True
        if ranged and start >= size and size > 0:
            self.send_response(416)
            self.send_header('Content-Range', 'bytes */%d' % size)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        self.send_response(206 if ranged else 200)
        if ranged:
            self.send_header('Content-Range', 'bytes %d-%d/%d' % (start, end - 1, size))
        if mode in ('range', 'changing'):
            self.send_header('Accept-Ranges', 'bytes')
        self.send_header('ETag', etag)
        self.send_header('Content-Length', str(end - start))
        self.end_headers()
        if head:
            return
        with open(path, 'rb') as f:
            f.seek(start)
            left = end - start
            while left > 0:
                data = f.read(min(CHUNK, left))
                if not data:
                    return
                left -= len(data)
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return
                r = rate()
                if r > 0:
                    time.sleep(len(data) / r)


server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
