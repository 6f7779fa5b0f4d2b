"""Real servers on 127.0.0.1 for the remote-storage tests.

* `S3Server`: moto's S3 server (`moto[server]`) in a child process on a free port, with IAM
  authentication turned on once it is filled, so wrong credentials are refused as on AWS.
* `SilentServer`: a TCP server that accepts connections and never answers (a hung endpoint).
* `VanishingRelay`: a TCP relay in front of the S3 server that goes away (closes every
  connection and stops listening) when a request asks for bytes in a given range of an object:
  a storage that disappears in the middle of a read, at a chosen point of it.

Nothing here connects anywhere but 127.0.0.1, and every server stops with the test (the S3
server also when the test process dies: it exits when its standard input closes).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REGION = "us-east-1"
BUCKET = "spark-logs"

_SERVER_CODE = """
import sys
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()  # until the test process closes it (or dies)
server.stop()
"""


@dataclass(frozen=True)
class Credentials:
    """An access key of the S3 server's IAM user."""

    key: str
    secret: str


def clean_aws_env(**extra: str) -> dict[str, str]:
    """This process's environment without any AWS setting of the machine's user, plus `extra`:
    no profile or config file is read, and botocore never asks an instance-metadata endpoint."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FSSPEC_"))}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    env.update(
        AWS_DEFAULT_REGION=REGION,
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        NO_PROXY="127.0.0.1,localhost",
    )
    env.update(extra)
    return env


class S3Server:
    """moto's S3 server in a child process, on 127.0.0.1 and a free port."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER_CODE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=clean_aws_env(),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"moto server did not start: {line!r}")
        self.port = int(line)
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.credentials = Credentials("", "")

    def client(self, credentials: Credentials | None = None):  # type: ignore[no-untyped-def]
        """A boto3 S3 client of this server (with the IAM user's key once auth is on)."""
        import boto3

        creds = credentials or self.credentials
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=creds.key or "setup",
            aws_secret_access_key=creds.secret or "setup",
        )

    def enable_auth(self) -> Credentials:
        """Make an IAM user allowed everything on S3, then refuse any other credentials."""
        import boto3

        iam = boto3.client(
            "iam",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
        )
        iam.create_user(UserName="reader")
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
        }
        iam.put_user_policy(
            UserName="reader", PolicyName="s3-all", PolicyDocument=json.dumps(policy)
        )
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        request = urllib.request.Request(
            f"{self.endpoint}/moto-api/reset-auth",
            data=b"0",
            method="POST",
            headers={"Content-Type": "text/plain"},  # a form body would not reach moto
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=10) as response:
            response.read()
        self.credentials = Credentials(key["AccessKeyId"], key["SecretAccessKey"])
        return self.credentials

    def upload(self, local: Path, key: str) -> str:
        """Copy a file, or a directory's files, under `key`; return its s3:// URL."""
        client = self.client()
        if local.is_dir():
            for child in sorted(local.iterdir()):
                if child.is_file():
                    client.upload_file(str(child), BUCKET, f"{key}/{child.name}")
        else:
            client.upload_file(str(local), BUCKET, key)
        return f"s3://{BUCKET}/{key}"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a command that reads this server with the IAM user's key."""
        return clean_aws_env(
            AWS_ACCESS_KEY_ID=self.credentials.key,
            AWS_SECRET_ACCESS_KEY=self.credentials.secret,
            **extra,
        )

    def stop(self) -> None:
        """Stop the server and wait for its process."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection and never sends a byte."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._held.append(conn)

    def stop(self) -> None:
        """Close the listener and every connection held."""
        self._listener.close()
        for conn in self._held:
            conn.close()
        self._thread.join(timeout=5)


_RANGE_RE = re.compile(rb"\r\nrange: *bytes=(\d+)-", re.IGNORECASE)


class VanishingRelay:
    """A TCP relay to `upstream_port` that goes away when a request asks for a byte range
    starting in [`cut_from`, `cut_to`): it closes every connection and its listener, so the
    request gets a cut connection and its retries a refused one."""

    def __init__(self, upstream_port: int, cut_from: int, cut_to: int) -> None:
        self._upstream_port = upstream_port
        self._cut = (cut_from, cut_to)
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.port = self._listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.gone = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._start(self._accept)

    def _start(self, target, *args) -> None:  # type: ignore[no-untyped-def]
        thread = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self.gone.is_set():
            try:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self._upstream_port))
            except OSError:
                return
            with self._lock:
                self._sockets += [client, upstream]
            self._start(self._requests, client, upstream)
            self._start(self._answers, upstream, client)

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        pending = b""
        try:
            while not self.gone.is_set():
                data = client.recv(65536)
                if not data:
                    break
                pending += data
                while b"\r\n\r\n" in pending:
                    head, pending = pending.split(b"\r\n\r\n", 1)
                    match = _RANGE_RE.search(head)
                    if match and self._cut[0] <= int(match.group(1)) < self._cut[1]:
                        self.go_away()
                        return
                upstream.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_WR)

    def _answers(self, upstream: socket.socket, client: socket.socket) -> None:
        try:
            while not self.gone.is_set():
                data = upstream.recv(65536)
                if not data:
                    break
                client.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_WR)

    def go_away(self) -> None:
        """Close the listener and every connection: the endpoint is gone."""
        self.gone.set()
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def stop(self) -> None:
        """Go away (if not gone yet) and wait for the relay's threads."""
        self.go_away()
        for thread in self._threads:
            thread.join(timeout=5)


@contextlib.contextmanager
def running(server: SilentServer | VanishingRelay) -> Iterator[None]:
    """Stop `server` when the block ends."""
    try:
        yield
    finally:
        server.stop()
