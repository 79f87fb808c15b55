/* minikafka.proto._crecords: the record loops of proto/records.py in C, for the client's hot paths.
 *
 * Optional: proto/records.py uses it when it imports and falls back to its own Python code
 * otherwise (no compiler at install time, or MINIKAFKA_PURE_PYTHON=1). Both produce the same
 * bytes and the same records; tests/unit/proto/test_crecords.py holds them to it. The byte
 * layout (the varint-framed records after a batch's 61-byte header) is documented once, in
 * proto/records.py's docstring. The batch header, the CRC and compression stay in Python: they
 * run once per batch.
 *
 *   RecordsBuffer      the records of one batch being built: append() encodes one record at
 *                      the end of a growing buffer, append_many() many from columns of keys,
 *                      values and headers up to a size; records() returns the bytes.
 *                      Subclassed by proto.records.RecordBatchBuilder. Not thread-safe (its
 *                      owner's lock).
 *   scan_records()     the largest record of such columns, checked before any is appended.
 *   decode_records()   proto.records._decode_records: count records from a batch body, each
 *                      made straight into a tuple subclass (Record or the consumer's record).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define HEADER_SIZE 61
#define MAX_VARINT 10

static PyObject *CorruptRecordError; /* proto.errors.CorruptRecordError */

/* --- varints ------------------------------------------------------------------------------- */

static inline int
varint_size(int64_t value)
{
    uint64_t v = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline char *
write_varint(char *out, int64_t value)
{
    uint64_t v = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    while (v >= 0x80) {
        *out++ = (char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *out++ = (char)v;
    return out;
}

/* Reads a zig-zag varint at data[*pos], below end. 0, or -1 with CorruptRecordError set. */
static inline int
read_varint(const unsigned char *data, Py_ssize_t end, Py_ssize_t *pos, int64_t *value)
{
    uint64_t result = 0;
    int shift = 0;
    Py_ssize_t p = *pos;
    for (;;) {
        if (p >= end) {
            PyErr_SetString(CorruptRecordError, "record data ends in the middle of a record");
            return -1;
        }
        unsigned char b = data[p++];
        if (shift == 63 && b > 1) {
            PyErr_SetString(CorruptRecordError, "varint does not fit in 64 bits");
            return -1;
        }
        result |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80))
            break;
        shift += 7;
        if (shift > 63) {
            PyErr_SetString(CorruptRecordError, "varint is longer than 10 bytes");
            return -1;
        }
    }
    *pos = p;
    *value = (int64_t)(result >> 1) ^ -(int64_t)(result & 1);
    return 0;
}

/* --- byte views of key, value and header values --------------------------------------------- */

typedef struct {
    const char *data;
    Py_ssize_t len; /* -1: None */
    Py_buffer view; /* filled only for bytes-like objects other than bytes */
    int has_view;
} Bytes;

static int
bytes_get(PyObject *obj, Bytes *b, const char *what)
{
    b->has_view = 0;
    if (obj == Py_None) {
        b->data = NULL;
        b->len = -1;
        return 0;
    }
    if (PyBytes_CheckExact(obj)) {
        b->data = PyBytes_AS_STRING(obj);
        b->len = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes or None, not %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    b->has_view = 1;
    b->data = b->view.buf;
    b->len = b->view.len;
    return 0;
}

static void
bytes_release(Bytes *b)
{
    if (b->has_view) {
        PyBuffer_Release(&b->view);
        b->has_view = 0;
    }
}

static inline Py_ssize_t
field_size(const Bytes *b)
{
    return b->len < 0 ? 1 : varint_size(b->len) + b->len;
}

static inline char *
write_field(char *out, const Bytes *b)
{
    out = write_varint(out, b->len);
    if (b->len > 0) {
        memcpy(out, b->data, (size_t)b->len);
        out += b->len;
    }
    return out;
}

/* --- RecordsBuffer -------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    char *buf;
    Py_ssize_t len;
    Py_ssize_t capacity;
    Py_ssize_t record_count;
    Py_ssize_t size; /* HEADER_SIZE + len: the uncompressed batch so far */
    long long base_timestamp;
    long long max_timestamp;
} RecordsBuffer;

static PyObject *
RecordsBuffer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    /* Arguments belong to the subclass's __init__. */
    RecordsBuffer *self = (RecordsBuffer *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->buf = NULL;
    self->len = 0;
    self->capacity = 0;
    self->record_count = 0;
    self->size = HEADER_SIZE;
    self->base_timestamp = -1;
    self->max_timestamp = -1;
    return (PyObject *)self;
}

static void
RecordsBuffer_dealloc(RecordsBuffer *self)
{
    PyMem_Free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
reserve(RecordsBuffer *self, Py_ssize_t extra)
{
    if (extra > PY_SSIZE_T_MAX - self->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = self->len + extra;
    if (need <= self->capacity)
        return 0;
    Py_ssize_t capacity = self->capacity ? self->capacity : 1024;
    while (capacity < need)
        capacity = capacity > PY_SSIZE_T_MAX / 2 ? need : capacity * 2;
    char *grown = PyMem_Realloc(self->buf, (size_t)capacity);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->buf = grown;
    self->capacity = capacity;
    return 0;
}

/* obj as a tuple (itself when it is one), or NULL with TypeError(message). A tuple owns its
 * items and cannot change, so pointers into them stay valid while Python code runs (a user's
 * __iter__ could otherwise empty a list, or free a key, while append still reads them). */
static PyObject *
as_tuple(PyObject *obj, const char *message)
{
    if (PyTuple_Check(obj))
        return Py_NewRef(obj);
    PyObject *tuple = PySequence_Tuple(obj);
    if (tuple == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, message);
    }
    return tuple;
}

typedef struct {
    PyObject *seq; /* the header pair, as a tuple */
    const char *key;
    Py_ssize_t key_len;
    Bytes value;
} HeaderView;

static void
headers_release(HeaderView *views, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        bytes_release(&views[i].value);
        Py_XDECREF(views[i].seq);
    }
}

/* *total += n, or -1 with OverflowError (only reachable on 32-bit builds with huge values). */
static inline int
add_size(Py_ssize_t *total, Py_ssize_t n)
{
    if (__builtin_add_overflow(*total, n, total)) {
        PyErr_SetString(PyExc_OverflowError, "the record is too large");
        return -1;
    }
    return 0;
}

/* Encodes one record at the end of the buffer: its offset delta, or -1 with an exception set.
 * headers: NULL or None for none.
 *
 * Everything that can run Python code (a headers iterable, a buffer export) runs before the
 * buffer's own state is read, so a reentrant call cannot leave this one with a stale offset
 * delta or base timestamp. */
static int64_t
append_one(RecordsBuffer *self, long long timestamp, PyObject *key_obj, PyObject *value_obj,
           PyObject *headers)
{
    Bytes key, value;
    if (bytes_get(key_obj, &key, "key") < 0)
        return -1;
    if (bytes_get(value_obj, &value, "value") < 0) {
        bytes_release(&key);
        return -1;
    }

    PyObject *headers_seq = NULL;
    HeaderView small[4];
    HeaderView *views = small;
    Py_ssize_t header_count = 0, views_filled = 0;
    int64_t result = -1;
    /* the body after attributes, timestampDelta and offsetDelta */
    Py_ssize_t rest = 0;
    if (add_size(&rest, field_size(&key)) < 0 || add_size(&rest, field_size(&value)) < 0)
        goto done;
    if (headers != NULL && headers != Py_None) {
        headers_seq = as_tuple(headers, "headers must be a sequence of (key, value) pairs");
        if (headers_seq == NULL)
            goto done;
        header_count = PyTuple_GET_SIZE(headers_seq);
    }
    rest += varint_size(header_count);
    if (header_count > 4) {
        views = PyMem_Malloc(sizeof(HeaderView) * (size_t)header_count);
        if (views == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < header_count; i++) {
        HeaderView *h = &views[i];
        h->seq = as_tuple(PyTuple_GET_ITEM(headers_seq, i), "a header must be a (key, value) pair");
        if (h->seq == NULL)
            goto done;
        h->value.has_view = 0;
        views_filled = i + 1;
        if (PyTuple_GET_SIZE(h->seq) != 2) {
            PyErr_SetString(PyExc_ValueError, "a header must be a (key, value) pair");
            goto done;
        }
        PyObject *hkey = PyTuple_GET_ITEM(h->seq, 0);
        if (!PyUnicode_Check(hkey)) {
            PyErr_Format(PyExc_TypeError, "a header key must be str, not %.100s",
                         Py_TYPE(hkey)->tp_name);
            goto done;
        }
        h->key = PyUnicode_AsUTF8AndSize(hkey, &h->key_len);
        if (h->key == NULL)
            goto done;
        if (bytes_get(PyTuple_GET_ITEM(h->seq, 1), &h->value, "a header value") < 0)
            goto done;
        if (add_size(&rest, varint_size(h->key_len) + h->key_len) < 0 ||
            add_size(&rest, field_size(&h->value)) < 0)
            goto done;
    }

    /* No Python code runs from here on. */
    long long base = self->record_count == 0 ? timestamp : self->base_timestamp;
    int64_t ts_delta;
    if (__builtin_sub_overflow((int64_t)timestamp, (int64_t)base, &ts_delta)) {
        PyErr_SetString(PyExc_OverflowError, "timestamp is too far from the batch's first");
        goto done;
    }
    int64_t offset_delta = self->record_count;
    Py_ssize_t body = 1 + varint_size(ts_delta) + varint_size(offset_delta);
    if (add_size(&body, rest) < 0)
        goto done;
    Py_ssize_t need = body;
    if (add_size(&need, MAX_VARINT) < 0 || reserve(self, need) < 0)
        goto done;
    char *out = self->buf + self->len;
    char *start = out;
    out = write_varint(out, body);
    *out++ = 0; /* attributes */
    out = write_varint(out, ts_delta);
    out = write_varint(out, offset_delta);
    out = write_field(out, &key);
    out = write_field(out, &value);
    out = write_varint(out, header_count);
    for (Py_ssize_t i = 0; i < header_count; i++) {
        out = write_varint(out, views[i].key_len);
        memcpy(out, views[i].key, (size_t)views[i].key_len);
        out += views[i].key_len;
        out = write_field(out, &views[i].value);
    }
    self->len += out - start;
    self->size += out - start;
    if (self->record_count == 0)
        self->base_timestamp = timestamp;
    if (timestamp > self->max_timestamp)
        self->max_timestamp = timestamp;
    self->record_count++;
    result = offset_delta;

done:
    headers_release(views, views_filled);
    if (views != small)
        PyMem_Free(views);
    Py_XDECREF(headers_seq);
    bytes_release(&value);
    bytes_release(&key);
    return result;
}

/* append(timestamp, key, value, headers=()) -> offset delta of the record. */
static PyObject *
RecordsBuffer_append(RecordsBuffer *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3 || nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "append(timestamp, key, value, headers=())");
        return NULL;
    }
    long long timestamp = PyLong_AsLongLong(args[0]);
    if (timestamp == -1 && PyErr_Occurred())
        return NULL;
    int64_t delta = append_one(self, timestamp, args[1], args[2], nargs == 4 ? args[3] : NULL);
    return delta < 0 ? NULL : PyLong_FromLongLong(delta);
}

/* len(item) of a key or value for the size estimate: bytes or None only (0 for None); -1 with
 * TypeError. The many-record calls take exactly bytes, so a length is a field read. */
static inline Py_ssize_t
strict_len(PyObject *item, const char *what)
{
    if (item == Py_None)
        return 0;
    if (PyBytes_CheckExact(item))
        return PyBytes_GET_SIZE(item);
    PyErr_Format(PyExc_TypeError, "%s must be bytes or None, not %.100s", what,
                 Py_TYPE(item)->tp_name);
    return -1;
}

/* RecordBatchBuilder.estimate_record_size(key, value, headers) for bytes or None key and value:
 * 21 + their lengths + per header len(key) (in characters, as Python's len) + len(value) + 10.
 * -1 with an exception set. */
static Py_ssize_t
estimate_record(PyObject *key, PyObject *value, PyObject *headers)
{
    Py_ssize_t klen = strict_len(key, "a key"), vlen;
    if (klen < 0 || (vlen = strict_len(value, "a value")) < 0)
        return -1;
    Py_ssize_t size = 21 + klen + vlen;
    if (headers == NULL || headers == Py_None)
        return size;
    PyObject *seq = as_tuple(headers, "headers must be a sequence of (key, value) pairs");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(seq); i++) {
        PyObject *pair = as_tuple(PyTuple_GET_ITEM(seq, i), "a header must be a (key, value) pair");
        if (pair == NULL)
            goto fail;
        if (PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_ValueError, "a header must be a (key, value) pair");
            goto fail;
        }
        Py_ssize_t hk = PyObject_Size(PyTuple_GET_ITEM(pair, 0));
        PyObject *hvalue = PyTuple_GET_ITEM(pair, 1);
        Py_ssize_t hv = hvalue == Py_None ? 0 : PyObject_Size(hvalue);
        Py_DECREF(pair);
        if (hk < 0 || hv < 0)
            goto fail;
        size += hk + hv + 10;
    }
    Py_DECREF(seq);
    return size;
fail:
    Py_DECREF(seq);
    return -1;
}

/* The i-th item of an optional column (NULL: the column is absent, every item None). */
static inline PyObject *
column_item(PyObject *column, Py_ssize_t i)
{
    return column == NULL ? Py_None : PyTuple_GET_ITEM(column, i);
}

/* The optional column `obj` (None: absent) as a tuple of at least `need` items in *out.
 * 0, or -1 with an exception set. */
static int
column(PyObject *obj, Py_ssize_t need, const char *name, PyObject **out)
{
    *out = NULL;
    if (obj == Py_None)
        return 0;
    PyObject *tuple = as_tuple(obj, "keys, values and headers must be sequences");
    if (tuple == NULL)
        return -1;
    if (PyTuple_GET_SIZE(tuple) < need) {
        PyErr_Format(PyExc_ValueError, "%s has %zd items, fewer than the %zd records", name,
                     PyTuple_GET_SIZE(tuple), need);
        Py_DECREF(tuple);
        return -1;
    }
    *out = tuple;
    return 0;
}

/* append_many(timestamp, keys, values, headers, start, stop, limit, full_at) -> next index.
 *
 * Appends records start, start+1, ... of the columns (keys and headers may be None: none) with
 * one timestamp, as append would one by one, while the batch has room: a record whose estimate
 * (RecordBatchBuilder.estimate_record_size) would take the batch past `limit` bytes is not
 * appended unless the batch is empty. Stops after the record that takes the batch to
 * `full_at` bytes or more, or at `stop`. Keys and values must be bytes or None. */
static PyObject *
RecordsBuffer_append_many(RecordsBuffer *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "append_many(timestamp, keys, values, headers, start, stop, limit, "
                        "full_at)");
        return NULL;
    }
    long long timestamp = PyLong_AsLongLong(args[0]);
    if (timestamp == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[4]), stop, limit, full_at;
    if ((start == -1 && PyErr_Occurred()) ||
        ((stop = PyLong_AsSsize_t(args[5])) == -1 && PyErr_Occurred()) ||
        ((limit = PyLong_AsSsize_t(args[6])) == -1 && PyErr_Occurred()) ||
        ((full_at = PyLong_AsSsize_t(args[7])) == -1 && PyErr_Occurred()))
        return NULL;
    if (args[2] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "values must be a sequence");
        return NULL;
    }
    if (start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "start and stop out of range");
        return NULL;
    }
    PyObject *keys, *values, *headers = NULL, *result = NULL;
    if (column(args[2], stop, "values", &values) < 0)
        return NULL;
    if (column(args[1], stop, "keys", &keys) < 0 || column(args[3], stop, "headers", &headers) < 0)
        goto done;
    Py_ssize_t i = start;
    while (i < stop) {
        PyObject *key = column_item(keys, i), *value = PyTuple_GET_ITEM(values, i);
        PyObject *record_headers = column_item(headers, i);
        Py_ssize_t estimate = estimate_record(key, value, record_headers);
        if (estimate < 0)
            goto done;
        if (self->record_count > 0 && self->size + estimate > limit)
            break;
        if (append_one(self, timestamp, key, value, record_headers) < 0)
            goto done;
        i++;
        if (self->size >= full_at)
            break;
    }
    result = PyLong_FromSsize_t(i);
done:
    Py_XDECREF(headers);
    Py_XDECREF(keys);
    Py_DECREF(values);
    return result;
}

/* scan_records(keys, values, headers) -> (largest estimate, first record with neither key nor
 * value or -1): what the producer checks before appending any record of a many-record send. */
static PyObject *
scan_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "scan_records(keys, values, headers)");
        return NULL;
    }
    if (args[1] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "values must be a sequence");
        return NULL;
    }
    PyObject *keys, *values, *headers = NULL, *result = NULL;
    if (column(args[1], 0, "values", &values) < 0)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(values), largest = 0, empty = -1;
    if (column(args[0], n, "keys", &keys) < 0 || column(args[2], n, "headers", &headers) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = column_item(keys, i), *value = PyTuple_GET_ITEM(values, i);
        Py_ssize_t estimate = estimate_record(key, value, column_item(headers, i));
        if (estimate < 0)
            goto done;
        if (estimate > largest)
            largest = estimate;
        if (empty < 0 && key == Py_None && value == Py_None)
            empty = i;
    }
    result = Py_BuildValue("(nn)", largest, empty);
done:
    Py_XDECREF(headers);
    Py_XDECREF(keys);
    Py_DECREF(values);
    return result;
}

static PyObject *
RecordsBuffer_records(RecordsBuffer *self, PyObject *Py_UNUSED(ignored))
{
    return PyBytes_FromStringAndSize(self->buf ? self->buf : "", self->len);
}

static PyMethodDef RecordsBuffer_methods[] = {
    {"append", (PyCFunction)(void (*)(void))RecordsBuffer_append, METH_FASTCALL,
     "append(timestamp, key, value, headers=()) -> offset delta: encode one record"},
    {"append_many", (PyCFunction)(void (*)(void))RecordsBuffer_append_many, METH_FASTCALL,
     "append_many(timestamp, keys, values, headers, start, stop, limit, full_at) -> next "
     "index: encode records start.. while the batch has room (see proto/_crecords.c)"},
    {"records", (PyCFunction)RecordsBuffer_records, METH_NOARGS,
     "records() -> bytes: the records appended so far, uncompressed"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef RecordsBuffer_members[] = {
    {"record_count", T_PYSSIZET, offsetof(RecordsBuffer, record_count), READONLY, NULL},
    {"size", T_PYSSIZET, offsetof(RecordsBuffer, size), READONLY,
     "bytes of the uncompressed batch so far, header included"},
    {"base_timestamp", T_LONGLONG, offsetof(RecordsBuffer, base_timestamp), READONLY,
     "the first record's timestamp (-1 before it)"},
    {"max_timestamp", T_LONGLONG, offsetof(RecordsBuffer, max_timestamp), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject RecordsBufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "minikafka.proto._crecords.RecordsBuffer",
    .tp_basicsize = sizeof(RecordsBuffer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The encoded records of one batch being built.",
    .tp_new = RecordsBuffer_new,
    .tp_dealloc = (destructor)RecordsBuffer_dealloc,
    .tp_methods = RecordsBuffer_methods,
    .tp_members = RecordsBuffer_members,
};

/* --- decode_records ------------------------------------------------------------------------- */

static PyObject *
corrupt(const char *format, ...)
{
    va_list vargs;
    va_start(vargs, format);
    PyErr_FormatV(CorruptRecordError, format, vargs);
    va_end(vargs);
    return NULL;
}

/* data[pos:pos+len] as bytes, None for len -1; NULL with CorruptRecordError past end. */
static PyObject *
slice(const unsigned char *data, Py_ssize_t end, Py_ssize_t *pos, int64_t len)
{
    if (len < 0)
        Py_RETURN_NONE;
    if (len > end - *pos)
        return corrupt("record data ends in the middle of a record");
    PyObject *out = PyBytes_FromStringAndSize((const char *)data + *pos, (Py_ssize_t)len);
    *pos += (Py_ssize_t)len;
    return out;
}

static PyObject *
decode_headers(const unsigned char *data, Py_ssize_t end, Py_ssize_t *pos, int64_t count)
{
    if (count < 0 || count > end - *pos)
        return corrupt("record has %lld headers", (long long)count);
    PyObject *headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t klen, vlen;
        if (read_varint(data, end, pos, &klen) < 0)
            goto fail;
        if (klen < 0) {
            corrupt("record header with a null key");
            goto fail;
        }
        if (klen > end - *pos) {
            corrupt("record data ends in the middle of a record");
            goto fail;
        }
        PyObject *hkey = PyUnicode_DecodeUTF8((const char *)data + *pos, (Py_ssize_t)klen, NULL);
        if (hkey == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                corrupt("record header key is not UTF-8");
            }
            goto fail;
        }
        *pos += (Py_ssize_t)klen;
        PyObject *hvalue = NULL;
        if (read_varint(data, end, pos, &vlen) < 0 ||
            (hvalue = slice(data, end, pos, vlen)) == NULL) {
            Py_DECREF(hkey);
            goto fail;
        }
        PyObject *pair = PyTuple_Pack(2, hkey, hvalue);
        Py_DECREF(hkey);
        Py_DECREF(hvalue);
        if (pair == NULL)
            goto fail;
        PyTuple_SET_ITEM(headers, i, pair);
    }
    return headers;
fail:
    Py_DECREF(headers);
    return NULL;
}

/* True for a class tuple.__new__ accepts and whose instances are laid out as a plain tuple's: a
 * NamedTuple. tuple.__new__ itself decides (it refuses, say, os.stat_result, a C struct
 * sequence whose dealloc walks fields a tuple made here would not have); 0 with TypeError. */
static int
is_plain_tuple_class(PyTypeObject *type)
{
    if (!PyType_IsSubtype(type, &PyTuple_Type) ||
        type->tp_basicsize != PyTuple_Type.tp_basicsize ||
        type->tp_itemsize != PyTuple_Type.tp_itemsize) {
        PyErr_SetString(PyExc_TypeError, "record_type must be a NamedTuple class");
        return 0;
    }
    PyObject *empty = PyObject_CallMethod((PyObject *)&PyTuple_Type, "__new__", "(O)", type);
    if (empty == NULL)
        return 0;
    Py_DECREF(empty);
    return 1;
}

/* An instance of record_type holding items[0..n) (their references are taken, also on
 * failure). Up to 3.13, as tuple_subtype_new makes one: tp_alloc, then the items. From 3.14 a
 * tuple caches its hash in a field tp_alloc leaves at 0, so tuple.__new__ itself is used. */
static PyObject *
make_record(PyTypeObject *record_type, PyObject **items, Py_ssize_t n)
{
    PyObject *record = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (items[i] == NULL)
            goto done;
    }
#if PY_VERSION_HEX < 0x030E0000
    record = record_type->tp_alloc(record_type, n);
    if (record != NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(record, i, items[i]);
        return record;
    }
#else
    PyObject *plain = PyTuple_New(n);
    if (plain != NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(plain, i, items[i]);
        PyObject *args = PyTuple_Pack(1, plain);
        Py_DECREF(plain);
        if (args == NULL)
            return NULL;
        record = PyTuple_Type.tp_new(record_type, args, NULL);
        Py_DECREF(args);
        return record;
    }
#endif
done:
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    return record;
}

/* decode_records(data, pos, count, base_offset, base_timestamp, log_append_time, record_type,
 *                leading, middle) -> (records, position after them): as
 * proto.records._decode_records, whose docstring gives the record layout. */
static PyObject *
decode_records(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, count;
    long long base_offset, base_timestamp;
    int log_append_time;
    PyTypeObject *record_type;
    PyObject *leading, *middle;
    if (!PyArg_ParseTuple(args, "y*nnLLpO!O!O!:decode_records", &view, &pos, &count,
                          &base_offset, &base_timestamp, &log_append_time, &PyType_Type,
                          &record_type, &PyTuple_Type, &leading, &PyTuple_Type, &middle))
        return NULL;
    PyObject *records = NULL, *empty_headers = NULL;
    Py_ssize_t n_leading = PyTuple_GET_SIZE(leading), n_middle = PyTuple_GET_SIZE(middle);
    Py_ssize_t width = n_leading + n_middle + 5;
    if (!(n_leading == 0 && n_middle == 0) && !(n_leading == 2 && n_middle == 1)) {
        PyErr_SetString(PyExc_ValueError,
                        "leading takes two fields and middle one, or neither any");
        goto fail;
    }
    if (!is_plain_tuple_class(record_type))
        goto fail;
    if (pos < 0 || pos > view.len) {
        PyErr_SetString(PyExc_ValueError, "pos out of range");
        goto fail;
    }
    records = PyList_New(0);
    empty_headers = PyTuple_New(0);
    if (records == NULL || empty_headers == NULL)
        goto fail;
    const unsigned char *data = view.buf;
    Py_ssize_t end = view.len;
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, klen, vlen, hcount;
        if (read_varint(data, end, &pos, &length) < 0)
            goto fail;
        if (length < 6 || length > end - pos) {
            corrupt("record of length %lld overruns its batch", (long long)length);
            goto fail;
        }
        Py_ssize_t record_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes */
        if (read_varint(data, record_end, &pos, &ts_delta) < 0 ||
            read_varint(data, record_end, &pos, &offset_delta) < 0 ||
            read_varint(data, record_end, &pos, &klen) < 0)
            goto fail;
        PyObject *key = slice(data, record_end, &pos, klen);
        if (key == NULL)
            goto fail;
        PyObject *value = NULL, *headers = NULL;
        if (read_varint(data, record_end, &pos, &vlen) < 0 ||
            (value = slice(data, record_end, &pos, vlen)) == NULL ||
            read_varint(data, record_end, &pos, &hcount) < 0) {
            Py_DECREF(key);
            Py_XDECREF(value);
            goto fail;
        }
        if (hcount == 0) {
            headers = Py_NewRef(empty_headers);
        } else if ((headers = decode_headers(data, record_end, &pos, hcount)) == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        if (pos != record_end) {
            corrupt("record at offset delta %lld has length %lld but its fields take %lld",
                    (long long)offset_delta, (long long)length,
                    (long long)(length + pos - record_end));
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto fail;
        }
        int64_t offset_value, timestamp_value = base_timestamp;
        if (__builtin_add_overflow((int64_t)base_offset, offset_delta, &offset_value) ||
            (!log_append_time &&
             __builtin_add_overflow((int64_t)base_timestamp, ts_delta, &timestamp_value))) {
            corrupt("record at offset delta %lld is out of the 64-bit range",
                    (long long)offset_delta);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto fail;
        }
        PyObject *items[8];
        Py_ssize_t f = 0;
        if (n_leading) {
            items[f++] = Py_NewRef(PyTuple_GET_ITEM(leading, 0));
            items[f++] = Py_NewRef(PyTuple_GET_ITEM(leading, 1));
        }
        items[f++] = PyLong_FromLongLong(offset_value);
        items[f++] = PyLong_FromLongLong(timestamp_value);
        if (n_middle)
            items[f++] = Py_NewRef(PyTuple_GET_ITEM(middle, 0));
        items[f++] = key;
        items[f++] = value;
        items[f++] = headers;
        PyObject *record = make_record(record_type, items, width); /* takes the items */
        if (record == NULL)
            goto fail;
        int appended = PyList_Append(records, record);
        Py_DECREF(record);
        if (appended < 0)
            goto fail;
    }
    Py_DECREF(empty_headers);
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nn)", records, pos);
fail:
    Py_XDECREF(records);
    Py_XDECREF(empty_headers);
    PyBuffer_Release(&view);
    return NULL;
}

/* --- the module ----------------------------------------------------------------------------- */

static PyMethodDef module_methods[] = {
    {"decode_records", decode_records, METH_VARARGS,
     "decode_records(data, pos, count, base_offset, base_timestamp, log_append_time, "
     "record_type, leading, middle) -> (records, position after them)"},
    {"scan_records", (PyCFunction)(void (*)(void))scan_records, METH_FASTCALL,
     "scan_records(keys, values, headers) -> (largest size estimate, first record with "
     "neither key nor value, or -1)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "minikafka.proto._crecords",
    "The record loops of proto.records in C (see proto/_crecords.c).", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__crecords(void)
{
    PyObject *errors = PyImport_ImportModule("minikafka.proto.errors");
    if (errors == NULL)
        return NULL;
    CorruptRecordError = PyObject_GetAttrString(errors, "CorruptRecordError");
    Py_DECREF(errors);
    if (CorruptRecordError == NULL)
        return NULL;
    if (PyType_Ready(&RecordsBufferType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "RecordsBuffer", (PyObject *)&RecordsBufferType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
