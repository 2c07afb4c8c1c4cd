/*
 * The per-record loops of reading lakeFS range files, in C. A key inserted between keys of a 200,000-object
 * repository makes lakeFS rewrite a ~50,000-record range; a pass checks that range's ID and its base's (every
 * record hashed) and compares the two record by record. In Python that cost ~0.3 s; here, no Python object is
 * made for a record that is only hashed or found unchanged.
 *
 * Each function accelerates Python code that stays the reference and the fallback where no C compiler was
 * found: `data_block_records` <-> sstable.py `_data_block_records`, `index_block_handles` <-> sstable.py
 * `_python_index_block_handles`, `blocks_hash_input` <-> range_id.py
 * `_python_blocks_hash_input`, `changed_records` <-> ranges.py `_python_changed_records`. Same results and the
 * same refusals; tests/graveler/test_graveler_native.py compares them on valid and corrupt blocks. A corrupt
 * block raises ValueError (the callers turn it into SSTableError).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define TRAILER_SIZE 8
#define KIND_SET 1
#define MAX_VARINT_LEN 10

/* Read an unsigned LEB128 varint of at most 10 bytes that fits 64 bits. 0 on success, -1 otherwise. */
static int read_uvarint(const unsigned char *buf, Py_ssize_t n, Py_ssize_t *pos, uint64_t *out)
{
    uint64_t value = 0;
    Py_ssize_t p = *pos;
    for (int i = 0; i < MAX_VARINT_LEN; i++, p++) {
        if (p >= n)
            return -1;
        uint64_t b = buf[p];
        if (i == 9 && b > 1)
            return -1; /* overflows 64 bits */
        value |= (b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *pos = p + 1;
            *out = value;
            return 0;
        }
    }
    return -1;
}

/* One pass over the entries of decompressed data blocks: the current record's internal key (prefix
 * compression undone) and value. The key buffer is reused from block to block. */
typedef struct {
    const unsigned char *block;
    Py_ssize_t n, end, pos;
    Py_ssize_t index; /* the block's number, for messages; -1 when the caller names it */
    unsigned char *ikey;
    Py_ssize_t ikey_len, ikey_cap;
    const unsigned char *value;
    Py_ssize_t vlen;
} Walker;

static void set_block_error(Py_ssize_t index, const char *what, Py_ssize_t offset)
{
    if (index >= 0)
        PyErr_Format(PyExc_ValueError, "data block %zd: %s at offset %zd", index, what, offset);
    else
        PyErr_Format(PyExc_ValueError, "%s at offset %zd", what, offset);
}

static int walker_start(Walker *w, PyObject *block, Py_ssize_t index)
{
    if (!PyBytes_Check(block)) {
        PyErr_SetString(PyExc_TypeError, "a data block must be bytes");
        return -1;
    }
    w->block = (const unsigned char *)PyBytes_AS_STRING(block);
    w->n = PyBytes_GET_SIZE(block);
    w->index = index;
    w->pos = 0;
    w->ikey_len = 0;
    if (w->n < 8) {
        if (index >= 0)
            PyErr_Format(PyExc_ValueError, "data block %zd: %zd bytes is too short", index, w->n);
        else
            PyErr_Format(PyExc_ValueError, "%zd bytes is too short", w->n);
        return -1;
    }
    const unsigned char *t = w->block + w->n - 4;
    uint64_t restarts = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
    if (restarts * 4 + 4 > (uint64_t)w->n) {
        set_block_error(index, "restart count exceeds the block", w->n - 4);
        return -1;
    }
    w->end = w->n - 4 - 4 * (Py_ssize_t)restarts;
    return 0;
}

/* 1: a record is current; 0: the block is done; -1: corrupt (ValueError set). */
static int walker_next(Walker *w)
{
    if (w->pos >= w->end)
        return 0;
    uint64_t shared, unshared, vlen;
    Py_ssize_t pos = w->pos;
    if (read_uvarint(w->block, w->n, &pos, &shared) < 0 || read_uvarint(w->block, w->n, &pos, &unshared) < 0 ||
        read_uvarint(w->block, w->n, &pos, &vlen) < 0) {
        set_block_error(w->index, "corrupt entry (bad varint)", w->pos);
        return -1;
    }
    if (unshared > (uint64_t)(w->end - pos) || vlen > (uint64_t)(w->end - pos) - unshared) {
        set_block_error(w->index, "entry overruns the block", pos);
        return -1;
    }
    if (shared > (uint64_t)w->ikey_len || shared + unshared < TRAILER_SIZE) {
        set_block_error(w->index, "corrupt key", pos);
        return -1;
    }
    Py_ssize_t klen = (Py_ssize_t)(shared + unshared);
    if (klen > w->ikey_cap) {
        Py_ssize_t cap = klen * 2 < 64 ? 64 : klen * 2;
        unsigned char *grown = PyMem_Realloc(w->ikey, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->ikey = grown;
        w->ikey_cap = cap;
    }
    memcpy(w->ikey + shared, w->block + pos, (size_t)unshared);
    w->ikey_len = klen;
    w->value = w->block + pos + (Py_ssize_t)unshared;
    w->vlen = (Py_ssize_t)vlen;
    w->pos = pos + (Py_ssize_t)unshared + (Py_ssize_t)vlen;
    unsigned char kind = w->ikey[klen - TRAILER_SIZE];
    if (kind != KIND_SET) {
        PyObject *key = PyBytes_FromStringAndSize((const char *)w->ikey, klen - TRAILER_SIZE);
        if (key != NULL) {
            if (w->index >= 0)
                PyErr_Format(PyExc_ValueError, "data block %zd: record %R has key kind %d (lakeFS writes only SET "
                             "records)", w->index, key, (int)kind);
            else
                PyErr_Format(PyExc_ValueError, "record %R has key kind %d (lakeFS writes only SET records)", key,
                             (int)kind);
            Py_DECREF(key);
        }
        return -1;
    }
    return 1;
}

/* A walker over a list of blocks, in order. */
typedef struct {
    PyObject *blocks; /* borrowed: the caller's list */
    Py_ssize_t next_block;
    Walker w;
    int valid; /* a record is current */
} Cursor;

static int cursor_advance(Cursor *c)
{
    for (;;) {
        if (c->next_block > 0) {
            int r = walker_next(&c->w);
            if (r != 0) {
                c->valid = r == 1;
                return r;
            }
        }
        if (c->next_block >= PyList_GET_SIZE(c->blocks)) {
            c->valid = 0;
            return 0;
        }
        if (walker_start(&c->w, PyList_GET_ITEM(c->blocks, c->next_block), c->next_block) < 0)
            return -1;
        c->next_block++;
    }
}

static int cursor_open(Cursor *c, PyObject *blocks)
{
    memset(c, 0, sizeof(*c));
    if (!PyList_Check(blocks)) {
        PyErr_SetString(PyExc_TypeError, "data blocks must be a list of bytes");
        return -1;
    }
    c->blocks = blocks;
    return cursor_advance(c);
}

static PyObject *current_pair(const Walker *w)
{
    PyObject *key = PyBytes_FromStringAndSize((const char *)w->ikey, w->ikey_len - TRAILER_SIZE);
    if (key == NULL)
        return NULL;
    PyObject *value = PyBytes_FromStringAndSize((const char *)w->value, w->vlen);
    if (value == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, key, value);
    Py_DECREF(key);
    Py_DECREF(value);
    return pair;
}

PyDoc_STRVAR(data_block_records_doc,
             "data_block_records(block: bytes) -> list[tuple[bytes, bytes]]\n\n"
             "(user key, raw value) of every entry of a decompressed data block, prefix compression undone and "
             "the 8-byte internal-key trailer stripped; refuses a corrupt entry or a record that is not a SET.");

static PyObject *data_block_records(PyObject *module, PyObject *block)
{
    (void)module;
    Walker w;
    memset(&w, 0, sizeof(w));
    PyObject *out = NULL;
    if (walker_start(&w, block, -1) < 0)
        goto done;
    out = PyList_New(0);
    int r;
    while (out != NULL && (r = walker_next(&w)) != 0) {
        PyObject *pair = r < 0 ? NULL : current_pair(&w);
        if (pair == NULL || PyList_Append(out, pair) < 0)
            Py_CLEAR(out);
        Py_XDECREF(pair);
    }
done:
    PyMem_Free(w.ikey);
    return out;
}

/* Append `value` in decimal at `w`; returns the end. */
static char *write_decimal(char *w, Py_ssize_t value)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0);
    while (n > 0)
        *w++ = digits[--n];
    return w;
}

PyDoc_STRVAR(blocks_hash_input_doc,
             "blocks_hash_input(blocks: list[bytes]) -> bytes\n\n"
             "What lakeFS's range ID hashes for the records of these data blocks: `len(key) key | len(value) "
             "value |` each, lengths in decimal; refuses what data_block_records refuses.");

static PyObject *blocks_hash_input(PyObject *module, PyObject *blocks)
{
    (void)module;
    Cursor c;
    PyObject *out = NULL;
    if (cursor_open(&c, blocks) < 0)
        goto done;
    Py_ssize_t cap = 4096, used = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(blocks); i++) {
        PyObject *block = PyList_GET_ITEM(blocks, i);
        cap += PyBytes_Check(block) ? 2 * PyBytes_GET_SIZE(block) : 0; /* a non-bytes block is refused later */
    }
    out = PyBytes_FromStringAndSize(NULL, cap);
    while (out != NULL && c.valid) {
        Py_ssize_t klen = c.w.ikey_len - TRAILER_SIZE;
        Py_ssize_t need = klen + c.w.vlen + 48;
        if (used + need > cap) {
            cap = (cap + need) * 2;
            if (_PyBytes_Resize(&out, cap) < 0)
                break; /* out is NULL */
        }
        char *w = PyBytes_AS_STRING(out) + used;
        w = write_decimal(w, klen);
        memcpy(w, c.w.ikey, (size_t)klen);
        w += klen;
        *w++ = '|';
        w = write_decimal(w, c.w.vlen);
        memcpy(w, c.w.value, (size_t)c.w.vlen);
        w += c.w.vlen;
        *w++ = '|';
        used = w - PyBytes_AS_STRING(out);
        if (cursor_advance(&c) < 0)
            Py_CLEAR(out);
    }
    if (out != NULL)
        _PyBytes_Resize(&out, used);
done:
    PyMem_Free(c.w.ikey);
    return out;
}

static int compare_keys(const Walker *a, const Walker *b)
{
    Py_ssize_t la = a->ikey_len - TRAILER_SIZE, lb = b->ikey_len - TRAILER_SIZE;
    int c = memcmp(a->ikey, b->ikey, (size_t)(la < lb ? la : lb));
    if (c != 0)
        return c;
    return la < lb ? -1 : la > lb;
}

PyDoc_STRVAR(changed_records_doc,
             "changed_records(blocks: list[bytes], bases: list[list[bytes]]) -> tuple[list[tuple[bytes, bytes]], "
             "int]\n\n"
             "The (key, raw value) records of `blocks` that no base holds byte for byte (same key, same value), "
             "and how many it holds. Each base is the data blocks of one range, in key order; records of "
             "`blocks` are only made into Python objects when they changed.");

static PyObject *changed_records(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *blocks, *bases;
    if (!PyArg_ParseTuple(args, "O!O!:changed_records", &PyList_Type, &blocks, &PyList_Type, &bases))
        return NULL;
    Py_ssize_t nbases = PyList_GET_SIZE(bases);
    Cursor c;
    memset(&c, 0, sizeof(c));
    Cursor *base = PyMem_Calloc((size_t)(nbases > 0 ? nbases : 1), sizeof(Cursor));
    PyObject *changed = NULL, *result = NULL;
    Py_ssize_t unchanged = 0;
    if (base == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nbases; i++)
        if (cursor_open(&base[i], PyList_GET_ITEM(bases, i)) < 0)
            goto done;
    if (cursor_open(&c, blocks) < 0 || (changed = PyList_New(0)) == NULL)
        goto done;
    while (c.valid) {
        int same = 0;
        for (Py_ssize_t i = 0; i < nbases && !same; i++) {
            Cursor *b = &base[i];
            int order = 1;
            while (b->valid && (order = compare_keys(&b->w, &c.w)) < 0)
                if (cursor_advance(b) < 0)
                    goto done;
            same = b->valid && order == 0 && b->w.vlen == c.w.vlen &&
                   memcmp(b->w.value, c.w.value, (size_t)c.w.vlen) == 0;
        }
        if (same) {
            unchanged++;
        } else {
            PyObject *pair = current_pair(&c.w);
            int appended = pair == NULL ? -1 : PyList_Append(changed, pair);
            Py_XDECREF(pair);
            if (appended < 0)
                goto done;
        }
        if (cursor_advance(&c) < 0)
            goto done;
    }
    result = Py_BuildValue("(On)", changed, unchanged);
done:
    Py_XDECREF(changed);
    PyMem_Free(c.w.ikey);
    if (base != NULL) {
        for (Py_ssize_t i = 0; i < nbases; i++)
            PyMem_Free(base[i].w.ikey);
        PyMem_Free(base);
    }
    return result;
}

PyDoc_STRVAR(index_block_handles_doc,
             "index_block_handles(block: bytes) -> list[tuple[int, int]]\n\n"
             "The block handles (offset, length) an index block's entries hold, in order; refuses a corrupt entry "
             "or handle.");

static PyObject *index_block_handles(PyObject *module, PyObject *block)
{
    (void)module;
    if (!PyBytes_Check(block)) {
        PyErr_SetString(PyExc_TypeError, "an index block must be bytes");
        return NULL;
    }
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(block);
    Py_ssize_t n = PyBytes_GET_SIZE(block);
    if (n < 4) {
        PyErr_Format(PyExc_ValueError, "%zd bytes is too short to hold a restart count", n);
        return NULL;
    }
    uint64_t restarts = (uint64_t)b[n - 4] | (uint64_t)b[n - 3] << 8 | (uint64_t)b[n - 2] << 16 |
                        (uint64_t)b[n - 1] << 24;
    if (restarts == 0 || restarts * 4 + 4 > (uint64_t)n) {
        PyErr_Format(PyExc_ValueError, "invalid restart count %llu for a %zd-byte block",
                     (unsigned long long)restarts, n);
        return NULL;
    }
    Py_ssize_t end = n - 4 - 4 * (Py_ssize_t)restarts, pos = 0;
    uint64_t key_len = 0;
    PyObject *out = PyList_New(0);
    while (out != NULL && pos < end) {
        uint64_t shared, unshared, vlen, offset, length;
        Py_ssize_t entry = pos;
        if (read_uvarint(b, n, &pos, &shared) < 0 || read_uvarint(b, n, &pos, &unshared) < 0 ||
            read_uvarint(b, n, &pos, &vlen) < 0) {
            PyErr_Format(PyExc_ValueError, "corrupt entry at offset %zd (bad varint)", entry);
            Py_CLEAR(out);
            break;
        }
        if (shared > key_len || unshared > (uint64_t)(end - pos) || vlen > (uint64_t)(end - pos) - unshared) {
            PyErr_Format(PyExc_ValueError, "corrupt entry at offset %zd", pos);
            Py_CLEAR(out);
            break;
        }
        key_len = shared + unshared;
        Py_ssize_t value = pos + (Py_ssize_t)unshared, value_end = value + (Py_ssize_t)vlen;
        if (read_uvarint(b, value_end, &value, &offset) < 0 || read_uvarint(b, value_end, &value, &length) < 0) {
            PyErr_Format(PyExc_ValueError, "corrupt block handle at offset %zd", pos + (Py_ssize_t)unshared);
            Py_CLEAR(out);
            break;
        }
        PyObject *handle = Py_BuildValue("(KK)", (unsigned long long)offset, (unsigned long long)length);
        if (handle == NULL || PyList_Append(out, handle) < 0)
            Py_CLEAR(out);
        Py_XDECREF(handle);
        pos = value_end;
    }
    return out;
}

static PyMethodDef methods[] = {
    {"index_block_handles", index_block_handles, METH_O, index_block_handles_doc},
    {"data_block_records", data_block_records, METH_O, data_block_records_doc},
    {"blocks_hash_input", blocks_hash_input, METH_O, blocks_hash_input_doc},
    {"changed_records", changed_records, METH_VARARGS, changed_records_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "lakefs_mirror_dagster.graveler._native",
    "C loops of reading range files; the Python functions they accelerate are the reference.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
    return PyModule_Create(&module_def);
}
