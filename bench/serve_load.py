"""Load on `ppsim serve`: 200 concurrent clients, 16 slow and 8 idle ones, a second server on the
same port. Usage: python3 bench/serve_load.py build/dev/ppsim PORT (run from the repository root;
clients bind 127.0.x.y source addresses, all on this machine). Prints the README's figures."""
import http.client, os, socket, statistics, subprocess, sys, threading, time
exe, port = sys.argv[1], int(sys.argv[2])
srv = subprocess.Popen([exe, "serve", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=os.getcwd())
srv.stdout.readline()
def get(path, src="127.0.0.1", timeout=60):
    t0 = time.time()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(src, 0))
        c.request("GET", path); r = c.getresponse(); r.read(); c.close()
        return r.status, time.time() - t0
    except Exception as e:
        return str(type(e).__name__), time.time() - t0
def burst(n, path, label, spread=False):
    res = [None] * n
    def one(i): res[i] = get(path, f"127.0.{1 + i // 250}.{1 + i % 250}" if spread else "127.0.0.1")
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    t0 = time.time(); [t.start() for t in ts]; [t.join() for t in ts]; wall = time.time() - t0
    codes = {}
    for s, _ in res: codes[s] = codes.get(s, 0) + 1
    lat = sorted(d for _, d in res)
    print(f"{label}: {n} clients, {wall:.2f} s in all, codes {codes}, latency median {statistics.median(lat)*1000:.0f} ms, max {lat[-1]*1000:.0f} ms")
burst(200, "/", "200 concurrent GET /")
burst(200, "/api/schedules", "200 concurrent GET /api/schedules")
burst(200, "/api/compare?s=1f1b&p=4&m=8", "200 concurrent /api/compare, one address")
burst(200, "/api/compare?s=1f1b&p=4&m=8", "200 concurrent /api/compare, 200 addresses", spread=True)
# 16 slow clients (one byte every 2 s) and 8 idle sockets
slow = []
for i in range(16):
    s = socket.socket(); s.bind((f"127.0.0.{100+i}", 0)); s.connect(("127.0.0.1", port)); slow.append(s)
idle = []
for i in range(8):
    s = socket.socket(); s.bind((f"127.0.0.{150+i}", 0)); s.connect(("127.0.0.1", port)); idle.append(s)
stop = False
def trickle():
    line = b"GET / HTTP/1.1\r\nHost: x\r\n"
    for b in line:
        if stop: return
        for s in slow:
            try: s.send(bytes([b]))
            except Exception: pass
        time.sleep(2)
t = threading.Thread(target=trickle); t.start(); time.sleep(1)
lat = [get("/")[1] for _ in range(10)]
print(f"with 16 slow clients (a byte every 2 s) and 8 idle sockets: 10 x GET /, median {statistics.median(lat)*1000:.0f} ms, max {max(lat)*1000:.0f} ms")
burst(200, "/api/schedules", "  and meanwhile 200 concurrent GET /api/schedules")
stop = True; t.join()
# second server on the same port
r = subprocess.run([exe, "serve", "--port", str(port)], capture_output=True, text=True, timeout=20)
print(f"second serve on port {port}: exit {r.returncode}: {r.stderr.strip()}")
srv.terminate(); srv.wait()
