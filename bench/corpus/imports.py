"""A mix of stdlib imports (bench/coverage.sh corpus)."""
import argparse, asyncio, csv, dataclasses, datetime, decimal, email.message  # noqa: E401
import http.client, json, logging, pathlib, re, sqlite3, subprocess, tarfile  # noqa: E401
import threading, unittest, urllib.request, uuid, xml.etree.ElementTree, zipfile  # noqa: E401
