/*
 * The per-record loops of reading lakeFS range files, in C. A key inserted between keys of a 200,000-object
 * repository makes lakeFS rewrite a ~50,000-record range; a pass checks that range's ID and its base's (every
 * record hashed) and compares the two record by record. In Python that cost ~0.3 s; here, no Python object is
 * made for a record that is only hashed or found unchanged.
 *
 * Each function accelerates Python code that stays the reference and the fallback where no C compiler was
 * found: `data_block_records` <-> sstable.py `_data_block_records`, `index_block_handles` <-> sstable.py
 * `_python_index_block_handles`, `blocks_hash_input` <-> range_id.py
 * `_python_blocks_hash_input`, `changed_records` <-> ranges.py `_python_changed_records`, `read_blocks` <->
 * sstable.py `SSTable.read_block` (its CRC-32C check is the `crc32c` package's, its snappy decompression
 * cramjam's), `common_prefix` <-> range_id.py `_python_common_prefix`. Same results and the same refusals; tests/graveler/test_graveler_native.py compares them on valid
 * and corrupt blocks. A corrupt block raises ValueError (the callers turn it into SSTableError).
 * tests/graveler/fuzz_native.py builds this file with ASan and UBSan and feeds both sides mutated range files.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HAVE_SSE42_CRC 1
#endif

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
    /* the varints may reach into the restart array: then nothing is left for the key (a negative room must
     * not become a huge unsigned one) */
    if (pos > w->end || unshared > (uint64_t)(w->end - pos) || vlen > (uint64_t)(w->end - pos) - unshared) {
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
    /* With check_order, each key must be greater than the one before (a merge of ranges relies on it): the
     * previous user key is kept in prev. */
    int check_order, has_prev;
    unsigned char *prev;
    Py_ssize_t prev_len, prev_cap;
} Cursor;

/* 0 when the current key comes after the previous one (and becomes it), -1 with ValueError set otherwise. */
static int cursor_check_order(Cursor *c)
{
    const Walker *w = &c->w;
    Py_ssize_t len = w->ikey_len - TRAILER_SIZE;
    if (c->has_prev) {
        int cmp = memcmp(c->prev, w->ikey, (size_t)(c->prev_len < len ? c->prev_len : len));
        if (cmp > 0 || (cmp == 0 && c->prev_len >= len)) {
            set_block_error(w->index, "key not greater than the key before it", w->pos);
            return -1;
        }
    }
    if (len > c->prev_cap) {
        Py_ssize_t cap = len * 2 < 64 ? 64 : len * 2;
        unsigned char *grown = PyMem_Realloc(c->prev, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->prev = grown;
        c->prev_cap = cap;
    }
    memcpy(c->prev, w->ikey, (size_t)len);
    c->prev_len = len;
    c->has_prev = 1;
    return 0;
}

static int cursor_advance(Cursor *c)
{
    for (;;) {
        if (c->next_block > 0) {
            int r = walker_next(&c->w);
            if (r == 1 && c->check_order && cursor_check_order(c) < 0)
                r = -1;
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

static int cursor_open(Cursor *c, PyObject *blocks, int check_order)
{
    memset(c, 0, sizeof(*c));
    if (!PyList_Check(blocks)) {
        PyErr_SetString(PyExc_TypeError, "data blocks must be a list of bytes");
        return -1;
    }
    c->blocks = blocks;
    c->check_order = check_order;
    return cursor_advance(c);
}

static void cursor_free(Cursor *c)
{
    PyMem_Free(c->w.ikey);
    PyMem_Free(c->prev);
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
    if (cursor_open(&c, blocks, 0) < 0)
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
    cursor_free(&c);
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
             "`blocks` are only made into Python objects when they changed. Refuses a corrupt block, in `blocks` "
             "or in a base, and keys that are not in increasing order.");

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
        if (cursor_open(&base[i], PyList_GET_ITEM(bases, i), 1) < 0)
            goto done;
    if (cursor_open(&c, blocks, 1) < 0 || (changed = PyList_New(0)) == NULL)
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
    /* the rest of each base is read too: a base is refused whole, whichever of its records were needed */
    for (Py_ssize_t i = 0; i < nbases; i++)
        while (base[i].valid)
            if (cursor_advance(&base[i]) < 0)
                goto done;
    result = Py_BuildValue("(On)", changed, unchanged);
done:
    Py_XDECREF(changed);
    cursor_free(&c);
    if (base != NULL) {
        for (Py_ssize_t i = 0; i < nbases; i++)
            cursor_free(&base[i]);
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
        if (pos > end || shared > key_len || unshared > (uint64_t)(end - pos) ||
            vlen > (uint64_t)(end - pos) - unshared) {
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

/* ---------------------------------------------------------------- CRC-32C (Castagnoli), as pebble checks blocks */

#define CRC32C_POLY 0x82F63B78u /* reflected */
static uint32_t crc_table[256];

static void crc_table_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1u)));
        crc_table[i] = c;
    }
}

static uint32_t crc32c_table(uint32_t crc, const unsigned char *p, size_t n)
{
    while (n--)
        crc = crc_table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#ifdef HAVE_SSE42_CRC
static int have_sse42;

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = crc;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
    }
    uint32_t c32 = (uint32_t)c;
    for (; n; n--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
#endif

static uint32_t crc32c(const unsigned char *p, size_t n)
{
#ifdef HAVE_SSE42_CRC
    if (have_sse42)
        return crc32c_sse42(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
#endif
    return crc32c_table(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
}

static uint32_t masked_crc(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

/* ---------------------------------------------------------------- snappy, raw format */

/* Decompress `src` (a length preamble, then literal and copy elements) into a new bytes object; NULL with
 * *why set for input that is not valid snappy (and no Python error), NULL with a Python error set otherwise. */
static PyObject *snappy_decompress(const unsigned char *src, Py_ssize_t n, const char **why)
{
    Py_ssize_t pos = 0;
    uint64_t total;
    *why = NULL;
    if (read_uvarint(src, n, &pos, &total) < 0 || total > 0xFFFFFFFFu) {
        *why = "bad length preamble";
        return NULL;
    }
    /* No element makes more than 64 bytes of 3 (a copy with a 2-byte offset): a preamble beyond that is a lie,
     * refused before its buffer (up to 4 GiB) is allocated. */
    if (total / 22 > (uint64_t)n) {
        *why = "length preamble larger than the block can hold";
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (out == NULL)
        return NULL;
    unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(out);
    uint64_t d = 0;
    while (pos < n) {
        unsigned tag = src[pos++];
        uint64_t len, offset;
        if ((tag & 3) == 0) { /* literal */
            len = tag >> 2;
            if (len >= 60) {
                Py_ssize_t extra = (Py_ssize_t)len - 59;
                if (extra > n - pos)
                    goto truncated;
                len = 0;
                for (Py_ssize_t i = 0; i < extra; i++)
                    len |= (uint64_t)src[pos + i] << (8 * i);
                pos += extra;
            }
            len += 1;
            if (len > (uint64_t)(n - pos) || len > total - d)
                goto too_long;
            if (len <= 16 && pos + 16 <= n && d + 16 <= total)
                memcpy(dst + d, src + pos, 16); /* a fixed size: one move; the bytes past len are written over */
            else
                memcpy(dst + d, src + pos, (size_t)len);
            pos += (Py_ssize_t)len;
            d += len;
            continue;
        }
        if ((tag & 3) == 1) {
            if (pos >= n)
                goto truncated;
            len = 4 + ((tag >> 2) & 7);
            offset = ((uint64_t)(tag >> 5) << 8) | src[pos++];
        } else if ((tag & 3) == 2) {
            if (2 > n - pos)
                goto truncated;
            len = (tag >> 2) + 1;
            offset = (uint64_t)src[pos] | (uint64_t)src[pos + 1] << 8;
            pos += 2;
        } else {
            if (4 > n - pos)
                goto truncated;
            len = (tag >> 2) + 1;
            offset = (uint64_t)src[pos] | (uint64_t)src[pos + 1] << 8 | (uint64_t)src[pos + 2] << 16 |
                     (uint64_t)src[pos + 3] << 24;
            pos += 4;
        }
        if (offset == 0 || offset > d) {
            *why = "copy offset out of range";
            goto fail;
        }
        if (len > total - d)
            goto too_long;
        unsigned char *to = dst + d;
        const unsigned char *from = to - offset;
        if (offset >= 8 && len + 16 <= total - d) {
            /* whole words while the buffer has room past len: each word is read before it is written over,
             * and the bytes past len are written over by what comes next */
            uint64_t step = offset >= 16 ? 16 : 8;
            for (uint64_t i = 0; i < len; i += step)
                memcpy(to + i, from + i, step == 16 ? 16 : 8);
        } else if (offset >= len) {
            memcpy(to, from, (size_t)len);
        } else {
            for (uint64_t i = 0; i < len; i++) /* the copy repeats bytes it writes itself */
                to[i] = from[i];
        }
        d += len;
    }
    if (d != total) {
        *why = "fewer bytes than the length preamble says";
        goto fail;
    }
    return out;
truncated:
    *why = "element truncated";
    goto fail;
too_long:
    *why = "element runs past the end";
fail:
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(read_blocks_doc,
             "read_blocks(data: bytes, handles: list[tuple[int, int]], data_end: int, verify_crc: bool, "
             "first: int = 0) -> list[bytes]\n\n"
             "The data blocks at these (offset, length) handles of range file `data`: each bounds-checked "
             "against `data_end` (where the data area ends), its masked CRC-32C checked when `verify_crc`, "
             "and decompressed (none or snappy); refuses what SSTable.read_block refuses. Messages number the "
             "blocks from `first`.");

PyDoc_STRVAR(common_prefix_doc, "common_prefix(a: bytes, b: bytes) -> int\n\n"
                                "How many leading bytes `a` and `b` share.");

static PyObject *common_prefix(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "SS", &a, &b))
        return NULL;
    const unsigned char *x = (const unsigned char *)PyBytes_AS_STRING(a), *y = (const unsigned char *)PyBytes_AS_STRING(b);
    Py_ssize_t n = PyBytes_GET_SIZE(a) < PyBytes_GET_SIZE(b) ? PyBytes_GET_SIZE(a) : PyBytes_GET_SIZE(b), i = 0;
    while (i + 4096 <= n && memcmp(x + i, y + i, 4096) == 0)
        i += 4096;
    while (i < n && x[i] == y[i])
        i++;
    return PyLong_FromSsize_t(i);
}

static PyObject *read_blocks(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *data, *handles;
    Py_ssize_t data_end, first = 0;
    int verify;
    if (!PyArg_ParseTuple(args, "SO!np|n", &data, &PyList_Type, &handles, &data_end, &verify, &first))
        return NULL;
    const unsigned char *buf = (const unsigned char *)PyBytes_AS_STRING(data);
    if (data_end < 0 || data_end > PyBytes_GET_SIZE(data)) {
        PyErr_SetString(PyExc_ValueError, "the data area ends outside the file");
        return NULL;
    }
    Py_ssize_t count = PyList_GET_SIZE(handles);
    PyObject *out = PyList_New(count);
    for (Py_ssize_t i = 0; out != NULL && i < count; i++) {
        PyObject *handle = PyList_GET_ITEM(handles, i);
        unsigned long long offset, length;
        if (!PyTuple_Check(handle) || !PyArg_ParseTuple(handle, "KK", &offset, &length)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "a block handle is an (offset, length) tuple");
            Py_CLEAR(out);
            break;
        }
        if (offset > (unsigned long long)data_end || length > (unsigned long long)data_end - offset ||
            (unsigned long long)data_end - offset - length < 5) {
            PyErr_Format(PyExc_ValueError,
                         "data block %zd at offset %llu (+%llu bytes and trailer) extends past the data area, "
                         "which ends at %zd: file truncated or corrupt",
                         first + i, offset, length, data_end);
            Py_CLEAR(out);
            break;
        }
        const unsigned char *block = buf + offset, *trailer = block + length;
        if (verify) {
            uint32_t stored = (uint32_t)trailer[1] | (uint32_t)trailer[2] << 8 | (uint32_t)trailer[3] << 16 |
                              (uint32_t)trailer[4] << 24;
            uint32_t computed = masked_crc(crc32c(block, (size_t)length + 1));
            if (stored != computed) {
                PyErr_Format(PyExc_ValueError,
                             "checksum mismatch in data block %zd at offset %llu (length %llu): stored 0x%08x, "
                             "computed 0x%08x; the file is corrupt",
                             first + i, offset, length, stored, computed);
                Py_CLEAR(out);
                break;
            }
        }
        PyObject *contents = NULL;
        if (trailer[0] == 0) {
            contents = PyBytes_FromStringAndSize((const char *)block, (Py_ssize_t)length);
        } else if (trailer[0] == 1) {
            const char *why;
            contents = snappy_decompress(block, (Py_ssize_t)length, &why);
            if (contents == NULL && why != NULL)
                PyErr_Format(PyExc_ValueError, "data block %zd at offset %llu: snappy decompression failed: %s",
                             first + i, offset, why);
        } else {
            PyErr_Format(PyExc_ValueError, "data block %zd at offset %llu: unsupported compression type %d",
                         first + i, offset, (int)trailer[0]);
        }
        if (contents == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, contents);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"index_block_handles", index_block_handles, METH_O, index_block_handles_doc},
    {"data_block_records", data_block_records, METH_O, data_block_records_doc},
    {"blocks_hash_input", blocks_hash_input, METH_O, blocks_hash_input_doc},
    {"changed_records", changed_records, METH_VARARGS, changed_records_doc},
    {"read_blocks", read_blocks, METH_VARARGS, read_blocks_doc},
    {"common_prefix", common_prefix, METH_VARARGS, common_prefix_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "lakefs_mirror_dagster.graveler._native",
    "C loops of reading range files; the Python functions they accelerate are the reference.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
    crc_table_init();
#ifdef HAVE_SSE42_CRC
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
    return PyModule_Create(&module_def);
}
