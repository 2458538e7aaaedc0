# WebHDFS: a request that can never succeed is answered from its headers
# alone. Each request below announces a 1 GiB body and sends none of it; the
# head must answer (HDFS's status for the case) and close the connection
# instead of waiting for, reading or buffering the body. A server that waited
# would leave the client without an answer: the socket timeout is only there
# to turn such a hang into a failure.
start_silt || return
check "webhdfs: refusals are answered without the announced body, and close the connection" python3 - "$HDFS_PORT" <<'PY'
import socket, sys
port = int(sys.argv[1])
cases = [
    ("PUT", "/webhdfs/v1/t/s/f?op=CREATE", 403),        # a write: read-only
    ("POST", "/webhdfs/v1/t/s/f?op=APPEND", 403),
    ("GET", "/webhdfs/v1/t/s?op=MKDIRS", 400),          # an op of another method
    ("PUT", "/webhdfs/v1/t/s?op=GETFILESTATUS", 400),
    ("POST", "/webhdfs/v1/t/s", 400),                    # no op
    ("PATCH", "/webhdfs/v1/t/s?op=GETFILESTATUS", 405),  # not a WebHDFS method
]
bad = []
for method, target, want in cases:
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(60)
    s.sendall(f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1073741824\r\n\r\n".encode())
    head = b""
    try:
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                break
            head += chunk
    except socket.timeout:
        bad.append(f"{method} {target}: no answer while the body was pending")
        continue
    finally:
        s.close()
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    if status != want or headers.get("connection", "").lower() != "close":
        bad.append(f"{method} {target}: {lines[0]!r}, Connection {headers.get('connection')!r}; want {want} and close")
if bad:
    sys.exit("\n".join(bad))
PY
