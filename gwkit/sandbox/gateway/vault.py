"""Encryption of card numbers at rest.

The key is a Fernet key kept in a file beside the database (`<db>.key`, mode 0600), created on
first start. Only the vault ever sees a PAN in clear; the database holds ciphertext, the
masked form, and for cards paid with card fields a keyed digest (HMAC-SHA256 under a key derived
from the same key) by which a repeated card is found again instead of being encrypted anew.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

from cryptography.fernet import Fernet


class Vault:
    def __init__(self, key: bytes):
        self._fernet = Fernet(key)
        self._index_key = hmac.new(key, b"gwkit card index", hashlib.sha256).digest()

    @classmethod
    def beside(cls, db_path: Path) -> Vault:
        return cls.at(db_path.with_name(db_path.name + ".key"))

    @classmethod
    def at(cls, key_path: Path) -> Vault:
        """The vault whose key is in `key_path`, made (mode 0600) when there is none yet."""
        try:
            return cls(key_path.read_bytes().strip())
        except FileNotFoundError:
            pass
        key = Fernet.generate_key()
        try:
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # its owner's only
        except FileExistsError:  # pragma: no cover - another process created it first
            return cls(key_path.read_bytes().strip())
        with os.fdopen(fd, "wb") as handle:
            handle.write(key)
        return cls(key)

    def index(self, pan: str, expirydate: str) -> bytes:
        """A keyed digest that finds a card again without storing its number in clear."""
        return hmac.digest(self._index_key, f"{pan}|{expirydate}".encode("ascii"), "sha256")  # one-shot, in C

    def encrypt(self, pan: str) -> bytes:
        return self._fernet.encrypt(pan.encode("ascii"))

    def decrypt(self, token: bytes) -> str:
        return self._fernet.decrypt(token).decode("ascii")

    def __repr__(self) -> str:
        return "Vault(key=[redacted])"
