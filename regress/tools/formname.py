# Copyright (c) 2026 The agency authors
# SPDX-License-Identifier: ISC (see the file LICENSE)
#
# formname.py: how a Python model server reads a form part's name, for
# regress/integration/formdiff_test.  python-multipart (under Starlette
# and FastAPI) reads a part's Content-Disposition parameters with the
# standard library's email.message.Message.get_params, joins RFC 2231
# continuations and charsets with email.utils.collapse_rfc2231_value,
# and keeps them in a dict, so the last of two same names wins.  Each
# line of standard input is such a field's value; one line is written
# for each: "model" when the part is named model, "error" when the
# parsing fails (the server cannot read the form: nothing is misread),
# else "other".
import sys
from email.message import Message
from email.utils import collapse_rfc2231_value

for line in sys.stdin.buffer:
    value = line.rstrip(b'\n').decode('latin-1')
    m = Message()
    m['content-type'] = value
    options = {}
    try:
        for key, raw in (m.get_params(header='content-type',
                                      failobj=[]) or [])[1:]:
            if isinstance(raw, tuple):
                raw = collapse_rfc2231_value(raw)
            options[key.strip().lower()] = raw
    except Exception:
        print('error', flush=True)
        continue
    print('model' if options.get('name') == 'model' else 'other', flush=True)
