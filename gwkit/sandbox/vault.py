"""Encryption of card numbers at rest.

The key is a Fernet key kept in a file beside the database (`<db>.key`, mode 0600), created on
first start. Only the vault ever sees a PAN in clear; the database holds ciphertext and the
masked form.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet


class Vault:
    def __init__(self, key: bytes):
        self._fernet = Fernet(key)

    @classmethod
    def beside(cls, db_path: Path) -> "Vault":
        key_path = db_path.with_name(db_path.name + ".key")
        try:
            return cls(key_path.read_bytes().strip())
        except FileNotFoundError:
            key = Fernet.generate_key()
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(key)
            return cls(key)
        except FileExistsError:  # pragma: no cover - another process created it first
            return cls(key_path.read_bytes().strip())

    @classmethod
    def ephemeral(cls) -> "Vault":
        return cls(Fernet.generate_key())

    def encrypt(self, pan: str) -> bytes:
        return self._fernet.encrypt(pan.encode("ascii"))

    def decrypt(self, token: bytes) -> str:
        return self._fernet.decrypt(token).decode("ascii")

    def __repr__(self) -> str:
        return "Vault(key=[redacted])"
