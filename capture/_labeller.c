/* graphscope.capture._labeller: the CUPTI callback that labels each node a capture creates.
 *
 * attribution.py labels a node with the module running, the user's line and the line of
 * Inductor's generated code that launched it, read from Python's frames inside CUPTI's
 * GRAPHNODE_CREATED callback. Done in Python through a ctypes callback, that walk cost about
 * 15 us a node on the H100 (benchmarks/probe_labels.py): a capture of 10,411 nodes took 2.0x
 * its unrecorded time. Here the same walk runs in C on CPython's public frame API, and the
 * process's one CUPTI subscription calls this file's `callback` first: while labelling is on
 * it answers GRAPHNODE_CREATED itself and hands every other callback, unchanged, to the
 * subscriber's ctypes trampoline (callbacks.py), which calls Python's handlers; the gated
 * ones (below) only while a stream capture runs.
 *
 * A label is noted as a record of numbers (the code objects and the module's path by their
 * index in caches of what the walks met, each line as its instruction's offset); drain()
 * appends them to a Python list as the tuples attribution.py's Python labeller makes, off the
 * program's path: (node id, module or None, op (None here), code object or None, line,
 * generated file or None, generated line). Which file is whose comes from a Python function
 * (sites.Frames), asked once per file and cached in a dict.
 *
 * The module is read from the frames too: the innermost frame of a method whose `self` is an
 * nn.Module, named by its path in the outermost module running (a dict of id() to path, filled
 * by a Python function the first time a module is met). Global module hooks kept that stack
 * before, and cost 1.9 us a node: while one is registered, torch runs every module call
 * through its slow path. attribution.py's Python labeller reads the module the same way.
 *
 * Built by setup.py as an optional extension: where it is missing, attribution.py labels in
 * Python, with the same tuples.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* CPython 3.11 to 3.13: the walk reads the interpreter's own frames. Through the public API
 * (PyEval_GetFrame, PyFrame_GetBack) each frame walked is made into a frame object, and
 * `self` is read with PyFrame_GetVar, which on 3.11 and 3.12 copies all of a frame's locals
 * into a dict first; on the development VM that was most of a label's cost
 * (benchmarks/probe_labels.py, docs/RECORD.md). These versions' internal header is what
 * Cython includes for the same reads; their layout is fixed within a minor version. Other
 * versions, or use_interpreter_frames(False), walk through the public API. */
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030E0000
#define INTERPRETER_FRAMES 1
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif
#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#else
#define INTERPRETER_FRAMES 0
#if PY_VERSION_HEX < 0x030B0000
#include <frameobject.h> /* PyFrameObject's fields */
#endif
#endif

/* void CUPTIAPI callback(void *userdata, CUpti_CallbackDomain, CUpti_CallbackId, const void *) */
typedef void (*callback_fn)(void *, int, uint32_t, const void *);
/* CUptiResult cuptiGetGraphNodeId(CUgraphNode node, uint64_t *nodeId) */
typedef int (*node_id_fn)(void *, uint64_t *);

/* CUpti_ResourceData: context, resourceHandle, resourceDescriptor (a CUpti_GraphData for the
 * graph callbacks: graph, originalGraph, node, ...). callbacks.py reads the same offsets. */
#define DESCRIPTOR_OFFSET 16
#define NODE_OFFSET 16

enum { KIND_LIBRARY = 0, KIND_USER = 1, KIND_GENERATED = 2 };

static callback_fn forward;    /* the subscriber's ctypes trampoline */
static node_id_fn get_node_id; /* libcupti's cuptiGetGraphNodeId */
static int node_domain = -1;
static uint32_t node_cbid;
static volatile int labelling; /* read without the GIL first, again with it */

/* Gated callbacks (the calls that may break a stream capture, capture/record/failures.py)
 * stay enabled in CUPTI for the whole run and are dropped here while no capture runs: turning
 * them on and off in CUPTI at each capture cost far more than the capture, and handing each
 * synchronize of a program's loop to Python would cost the loop. Indexed [domain][cbid]. */
#define GATED_DOMAINS 4
#define GATED_IDS 2048
static unsigned char gated[GATED_DOMAINS][GATED_IDS];
static volatile int capturing; /* stream captures running, as the recorder counts them */

/* Set by start(), cleared by stop(); touched only with the GIL held. */
static PyObject *sink;        /* list: the label tuples */
static PyObject *names;       /* dict: id(module) -> its path */
static PyObject *module_type; /* torch.nn.Module */
static PyObject *kinds;       /* dict: filename -> KIND_* */
static PyObject *classify;    /* callable(filename) -> KIND_* */
static PyObject *learn;       /* callable(module, outermost module) -> the module's path */
static PyObject *on_error;    /* callable(exception), told of a failed label */
static PyObject *s_self;      /* "self", interned */

static int
is_finalizing(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* The KIND_* of a file, asking classify() once per file; -1 with an exception set. */
static long
kind_of(PyObject *filename)
{
    PyObject *known = PyDict_GetItemWithError(kinds, filename); /* borrowed */
    if (known != NULL)
        return PyLong_AsLong(known);
    if (PyErr_Occurred())
        return -1;
    PyObject *found = PyObject_CallOneArg(classify, filename);
    if (found == NULL)
        return -1;
    long kind = PyLong_AsLong(found);
    int stored = kind == -1 && PyErr_Occurred() ? -1 : PyDict_SetItem(kinds, filename, found);
    Py_DECREF(found);
    return stored < 0 ? -1 : kind;
}

/* One frame of a walk outward from the frame running, through the interpreter's frames
 * (`raw`, borrowed: each is a caller of the code running now, so it outlives the walk) or
 * through frame objects (`object`, a strong reference). */
typedef struct {
    PyFrameObject *object;
#if INTERPRETER_FRAMES
    _PyInterpreterFrame *raw;
#endif
} Frame;

static int raw_walk = INTERPRETER_FRAMES; /* use_interpreter_frames() */

/* probe_stage(): where a label stops, for benchmarks/probe_labels.py to split its cost on the
 * GPU machine (0: the whole label). */
enum { STAGE_ALL = 0, STAGE_LOCK = 1, STAGE_NODE_ID = 2, STAGE_WALK = 3 };
static int stage = STAGE_ALL;

#if INTERPRETER_FRAMES
/* The first complete frame from `frame` outward: frames not started yet, and 3.12's C-stack
 * shims, are none of the program's (PyEval_GetFrame skips them too). */
static _PyInterpreterFrame *
first_complete(_PyInterpreterFrame *frame)
{
    while (frame != NULL && _PyFrame_IsIncomplete(frame))
        frame = frame->previous;
    return frame;
}

static PyCodeObject *
raw_code(_PyInterpreterFrame *frame)
{
#if PY_VERSION_HEX >= 0x030D0000
    return _PyFrame_GetCode(frame);
#else
    return frame->f_code;
#endif
}
#endif

static int
frame_valid(const Frame *frame)
{
#if INTERPRETER_FRAMES
    if (raw_walk)
        return frame->raw != NULL;
#endif
    return frame->object != NULL;
}

/* The frame running now. */
static Frame
frame_first(void)
{
    Frame frame = {NULL};
#if INTERPRETER_FRAMES
    frame.raw = NULL;
    if (raw_walk) {
#if PY_VERSION_HEX >= 0x030D0000
        frame.raw = first_complete(PyThreadState_Get()->current_frame);
#else
        frame.raw = first_complete(PyThreadState_Get()->cframe->current_frame);
#endif
        return frame;
    }
#endif
    frame.object = (PyFrameObject *)Py_XNewRef(PyEval_GetFrame());
    return frame;
}

/* A second hold on the same frame. */
static Frame
frame_copy(const Frame *frame)
{
    Frame copy = *frame;
    Py_XINCREF(copy.object);
    return copy;
}

static void
frame_release(Frame *frame)
{
    Py_CLEAR(frame->object);
#if INTERPRETER_FRAMES
    frame->raw = NULL;
#endif
}

/* Step to the caller. */
static void
frame_next(Frame *frame)
{
#if INTERPRETER_FRAMES
    if (raw_walk) {
        frame->raw = first_complete(frame->raw->previous);
        return;
    }
#endif
    PyFrameObject *back = PyFrame_GetBack(frame->object);
    Py_SETREF(frame->object, back);
}

/* The frame's code object, borrowed: the frame holds it. */
static PyCodeObject *
frame_code(const Frame *frame)
{
#if INTERPRETER_FRAMES
    if (raw_walk)
        return raw_code(frame->raw);
#endif
    PyCodeObject *code = PyFrame_GetCode(frame->object);
    Py_DECREF(code);
    return code;
}

/* The byte offset of the instruction the frame runs (or calls from): its line is found from
 * it when the label is drained, off the program's path. */
static int
frame_offset(const Frame *frame)
{
#if INTERPRETER_FRAMES
    if (raw_walk)
        return _PyInterpreterFrame_LASTI(frame->raw) * (int)sizeof(_Py_CODEUNIT);
#endif
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(frame->object);
#else
    return frame->object->f_lasti * (int)sizeof(_Py_CODEUNIT);
#endif
}

/* ---- Caches: what a label needs, found without touching the objects it comes from ----
 *
 * A capture runs CUDA's own code between two nodes (about 14 us a node on the H100), which
 * leaves little of the labeller's data in the CPU's caches. Done from the objects (a file's
 * kind by its name in a dict, `self` by the code's variable names, a module's path by id() in
 * a dict, the line from the code's line table, a tuple made for each node), a label cost
 * 1.0 us with the caches warm and 4.9 us with 4 MiB touched between two labels, on the
 * development VM (.devwork's microbenchmark, docs/RECORD.md). Here each code object, type and
 * module met is looked up by its address in small open-addressing tables, a label is a
 * record of plain numbers, and lines and tuples are made when the labels are drained.
 * Every object an entry names is held by `held`, a list, until its labels are drained. */

typedef struct {
    uintptr_t *keys; /* 0: empty */
    int32_t *values;
    size_t mask;     /* capacity - 1, a power of two */
    size_t used;
} Table;

static size_t
slot_of(uintptr_t key, size_t mask)
{
    return (size_t)(((uint64_t)key >> 4) * 0x9E3779B97F4A7C15ull >> 20) & mask;
}

/* The value filed under `key`, or -1. */
static int32_t
table_get(const Table *table, uintptr_t key)
{
    if (table->keys == NULL)
        return -1;
    for (size_t i = slot_of(key, table->mask);; i = (i + 1) & table->mask) {
        if (table->keys[i] == key)
            return table->values[i];
        if (table->keys[i] == 0)
            return -1;
    }
}

static void
table_free(Table *table)
{
    PyMem_Free(table->keys);
    PyMem_Free(table->values);
    table->keys = NULL;
    table->values = NULL;
    table->mask = 0;
    table->used = 0;
}

/* File `value` under `key` (new or not); 0, or -1 with MemoryError set. */
static int
table_put(Table *table, uintptr_t key, int32_t value)
{
    if (table->keys == NULL || 2 * (table->used + 1) > table->mask + 1) {
        size_t capacity = table->keys == NULL ? 256 : 2 * (table->mask + 1);
        Table grown = {PyMem_Calloc(capacity, sizeof(uintptr_t)),
                       PyMem_Calloc(capacity, sizeof(int32_t)), capacity - 1, 0};
        if (grown.keys == NULL || grown.values == NULL) {
            table_free(&grown);
            PyErr_NoMemory();
            return -1;
        }
        for (size_t i = 0; table->keys != NULL && i <= table->mask; i++)
            if (table->keys[i] != 0)
                table_put(&grown, table->keys[i], table->values[i]); /* room: cannot fail */
        table_free(table);
        *table = grown;
    }
    size_t i = slot_of(key, table->mask);
    while (table->keys[i] != 0 && table->keys[i] != key)
        i = (i + 1) & table->mask;
    if (table->keys[i] == 0)
        table->used++;
    table->keys[i] = key;
    table->values[i] = value;
    return 0;
}

/* A code object met in a walk. */
typedef struct {
    PyCodeObject *code; /* held */
    signed char kind;   /* KIND_* of its file */
    signed char self;   /* 1: its first argument is named self; 2: and lives in a cell */
} CodeEntry;

/* A growing array of `size`-byte items; 0, or -1 with MemoryError set. */
typedef struct {
    char *items;
    Py_ssize_t count, capacity;
} Array;

static void *
array_add(Array *array, size_t size)
{
    if (array->count == array->capacity) {
        Py_ssize_t capacity = array->capacity ? 2 * array->capacity : 1024;
        char *grown = PyMem_Realloc(array->items, (size_t)capacity * size);
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        array->items = grown;
        array->capacity = capacity;
    }
    return array->items + (size_t)array->count++ * size;
}

static void
array_free(Array *array)
{
    PyMem_Free(array->items);
    array->items = NULL;
    array->count = array->capacity = 0;
}

/* A label as noted: indices into `codes` and `paths` (-1: none), byte offsets for lines. */
typedef struct {
    uint64_t id;
    void *node; /* the CUgraphNode, to read its id again while the chain below is unsettled */
    int32_t module, user, user_at, generated, generated_at;
} Record;

static PyObject *held;     /* list: a strong reference to every code, type and path entered */
static Table code_table;   /* code object -> index in codes */
static Array codes;        /* CodeEntry */
static Table type_table;   /* type -> 1 if an nn.Module subclass, else 0 */
static Table module_table; /* module -> index in paths; emptied whenever learn() runs */
static Array paths;        /* PyObject *, a module's path */
static Array records;      /* Record: labels not drained yet */

/* Node ids without asking CUPTI for each. cuptiGetGraphNodeId cost 0.64 us a node on the H100,
 * a fifth of the recorder's cost per captured node (docs/RECORD.md), and its answer is
 * (graph id << 32 | local id), where a graph's local ids count its nodes as they are made.
 * While one stream capture runs, the next node of the capture's graph is taken to have the
 * last id + 1, and every ID_CHECK_EVERY-th node CUPTI is asked. Its answer settles the chain:
 * the ids only grow, so a match means every guess since the last answer was right; a miss
 * reads each guessed record's id again from its node (the graph is being captured, so its
 * nodes live). The chain is settled, or dropped, before anything could free the graph: when
 * another graph is added to, and at each change of the count of captures (the end of a
 * capture that failed, or ended with another graph, drops it). drain() hands over only
 * settled records. */
#define ID_CHECK_EVERY 16
static struct {
    void *graph;      /* the graph the chain adds to; NULL: no chain */
    uint64_t id;      /* the id of its last node */
    int guessed;      /* ids guessed since CUPTI last answered */
    Py_ssize_t first; /* the index in records of the first guessed record */
} chain;
static unsigned long long ids_asked, ids_guessed, ids_missed; /* id_counts() */
static int guess_ids = 1;                                     /* guess_ids() */
/* The thread that began the one capture running (0: none known), and the graph of the first
 * node it made since: only that graph's nodes, made on that thread, are chained. A graph
 * built by hand (by another thread, or by a library in the middle of the capture) may be
 * destroyed at once, and a chain on it would then ask CUPTI about freed nodes. */
static unsigned long capture_thread;
static void *capture_graph;

static int
hold(PyObject *object)
{
    return PyList_Append(held, object);
}

/* Whether a code object's first argument is named self. */
static int
takes_self(PyCodeObject *code)
{
    if (code->co_argcount < 1)
        return 0;
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *varnames = PyCode_GetVarnames(code);
#else
    PyObject *varnames = Py_XNewRef(code->co_varnames);
#endif
    if (varnames == NULL) {
        PyErr_Clear();
        return 0;
    }
    int named_self = PyTuple_GET_SIZE(varnames) > 0 &&
                     PyUnicode_Compare(PyTuple_GET_ITEM(varnames, 0), s_self) == 0;
    Py_DECREF(varnames);
    return named_self;
}

/* The entry of a code object, entered the first time it is met; NULL with an exception set.
 * Entering may run Python (classify, once per file): the frames walked are the callers of
 * this code, so they stay where they are. */
static const CodeEntry *
code_entry(PyCodeObject *code, int32_t *index)
{
    int32_t known = table_get(&code_table, (uintptr_t)code);
    if (known < 0) {
        long kind = kind_of(code->co_filename);
        if (kind == -1 && PyErr_Occurred())
            return NULL;
        int self = takes_self(code);
#if INTERPRETER_FRAMES
        if (self && (_PyLocals_GetKind(code->co_localspluskinds, 0) & CO_FAST_CELL))
            self = 2;
#endif
        CodeEntry *entry = array_add(&codes, sizeof(CodeEntry));
        if (entry == NULL)
            return NULL;
        *entry = (CodeEntry){code, (signed char)kind, (signed char)self};
        known = (int32_t)(codes.count - 1);
        if (hold((PyObject *)code) < 0 || table_put(&code_table, (uintptr_t)code, known) < 0) {
            codes.count--;
            return NULL;
        }
    }
    *index = known;
    return (const CodeEntry *)codes.items + known;
}

/* The first argument of a method whose first argument is named self (borrowed; NULL if
 * unbound, or with an exception set on failure). */
static PyObject *
frame_self(const Frame *frame, const CodeEntry *entry)
{
#if INTERPRETER_FRAMES
    if (raw_walk) {
        PyObject *self = frame->raw->localsplus[0];
        /* A self that a closure captures lives in a cell, made before the frame is complete. */
        if (self != NULL && entry->self == 2 && PyCell_Check(self))
            self = PyCell_GET(self);
        return self;
    }
#endif
    (void)entry;
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *self = PyFrame_GetVar(frame->object, s_self);
#else
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *locals = PyFrame_GetLocals(frame->object);
#else
    PyObject *locals = PyFrame_FastToLocalsWithError(frame->object) < 0
                           ? NULL
                           : Py_XNewRef(frame->object->f_locals);
#endif
    PyObject *self = locals == NULL ? NULL : PyDict_GetItemWithError(locals, s_self);
    Py_XINCREF(self);
    Py_XDECREF(locals);
    if (self == NULL && !PyErr_Occurred())
        return NULL;
#endif
    if (self == NULL && PyErr_ExceptionMatches(PyExc_NameError))
        PyErr_Clear(); /* self deleted, or not bound yet */
    /* The frame holds self: the reference PyFrame_GetVar gave back is dropped here, so that
     * both walks answer a borrowed one. */
    Py_XDECREF(self);
    return self;
}

/* Whether an object is an nn.Module; -1 with an exception set. */
static int
is_module(PyObject *object)
{
    PyTypeObject *type = Py_TYPE(object);
    int32_t known = table_get(&type_table, (uintptr_t)type);
    if (known >= 0)
        return known;
    int found = PyType_IsSubtype(type, (PyTypeObject *)module_type);
    if (hold((PyObject *)type) < 0 || table_put(&type_table, (uintptr_t)type, found) < 0)
        return -1;
    return found;
}

/* The nn.Module a frame runs a method of (borrowed), NULL if none (an exception set only on
 * failure). */
static PyObject *
module_of(const Frame *frame, const CodeEntry *entry)
{
    if (!entry->self)
        return NULL;
    PyObject *self = frame_self(frame, entry);
    if (self == NULL)
        return NULL;
    int module = is_module(self);
    return module > 0 ? self : NULL;
}

/* The path of `module`, met for the first time, whose method `at` runs: looked up by id(),
 * else learned from the outermost module running (a new reference, or NULL with an exception
 * set). */
static PyObject *
learn_path(PyObject *module, const Frame *at)
{
    PyObject *key = PyLong_FromVoidPtr(module);
    if (key == NULL)
        return NULL;
    PyObject *path = PyDict_GetItemWithError(names, key); /* borrowed */
    Py_DECREF(key);
    if (path != NULL || PyErr_Occurred())
        return Py_XNewRef(path);
    /* Its tree is named from the outermost module on the stack. learn() may rename modules
     * met before (a tree met first inside another): the cached paths go. */
    module_table.used = 0;
    if (module_table.keys != NULL)
        memset(module_table.keys, 0, (module_table.mask + 1) * sizeof(uintptr_t));
    PyObject *outermost = Py_NewRef(module);
    Frame frame = frame_copy(at);
    for (; frame_valid(&frame); frame_next(&frame)) {
        int32_t index;
        const CodeEntry *entry = code_entry(frame_code(&frame), &index);
        PyObject *found = entry == NULL ? NULL : module_of(&frame, entry);
        if (found == NULL && PyErr_Occurred()) {
            frame_release(&frame);
            Py_DECREF(outermost);
            return NULL;
        }
        if (found != NULL)
            Py_SETREF(outermost, Py_NewRef(found));
    }
    frame_release(&frame);
    path = PyObject_CallFunctionObjArgs(learn, module, outermost, NULL);
    Py_DECREF(outermost);
    return path;
}

/* The index in `paths` of the path of `module`, whose method `at` runs; -1 with an exception
 * set. */
static int32_t
path_of(PyObject *module, const Frame *at)
{
    int32_t known = table_get(&module_table, (uintptr_t)module);
    if (known >= 0)
        return known;
    PyObject *path = learn_path(module, at);
    if (path == NULL)
        return -1;
    PyObject **slot = array_add(&paths, sizeof(PyObject *));
    int failed = slot == NULL || hold(path) < 0;
    if (!failed) {
        *slot = path; /* held */
        known = (int32_t)(paths.count - 1);
        failed = table_put(&module_table, (uintptr_t)module, known) < 0;
    }
    Py_DECREF(path);
    return failed ? -1 : known;
}

/* Read again, from CUPTI, the id of each record of the chain (its nodes live). */
static void
reread_chain(void)
{
    Record *all = (Record *)records.items;
    for (Py_ssize_t i = chain.first; i < records.count; i++) {
        uint64_t id = 0;
        ids_asked++;
        all[i].id = get_node_id(all[i].node, &id) == 0 ? id : 0; /* 0: not handed over */
    }
}

/* End the chain. Kept (its graph lives): CUPTI is asked for its last node's id, and every
 * record read again if that is not the id guessed; else its guessed records are dropped. */
static void
settle(int keep)
{
    if (chain.graph == NULL)
        return;
    if (!keep) {
        if (records.count > chain.first)
            records.count = chain.first;
    }
    else if (records.count > chain.first) {
        const Record *last = (const Record *)records.items + records.count - 1;
        uint64_t id = 0;
        ids_asked++;
        if (get_node_id(last->node, &id) != 0 || id != last->id) {
            ids_missed++;
            reread_chain();
        }
    }
    chain.graph = NULL;
}

/* The id of `node`, made in `graph`: 1 guessed, 2 asked of CUPTI (see `chain`), or 0 if CUPTI
 * has none. */
static int
node_id(void *graph, void *node, uint64_t *id)
{
    if (graph != NULL && graph == chain.graph && chain.guessed < ID_CHECK_EVERY - 1) {
        *id = ++chain.id;
        chain.guessed++;
        ids_guessed++;
        return 1;
    }
    int same = graph != NULL && graph == chain.graph;
    if (!same)
        settle(1); /* another graph of this capture: the chain's graph lives */
    ids_asked++;
    if (get_node_id(node, id) != 0) {
        settle(1);
        return 0;
    }
    if (same && *id != chain.id + 1) {
        ids_missed++;
        reread_chain();
    }
    /* A chain only while exactly one capture runs, on its thread: then nothing frees its graph
     * before the capture count changes, which settles it. */
    int chained = guess_ids && capturing == 1 && graph != NULL && capture_thread != 0 &&
                  PyThread_get_thread_ident() == capture_thread;
    if (chained && capture_graph == NULL)
        capture_graph = graph;
    chained = chained && graph == capture_graph;
    chain.graph = chained ? graph : NULL;
    chain.id = *id;
    chain.guessed = 0;
    return 2;
}

/* Note the label of the node CUPTI reports; 0, or -1 with an exception set. */
static int
label(const void *data)
{
    if (stage == STAGE_LOCK)
        return 0;
    const char *descriptor = *(const char *const *)((const char *)data + DESCRIPTOR_OFFSET);
    if (descriptor == NULL)
        return 0;
    void *node = *(void *const *)(descriptor + NODE_OFFSET);
    uint64_t id = 0;
    int found = node_id(*(void *const *)descriptor, node, &id);
    if (!found)
        return 0; /* no id, no key to file the label under: as the Python path, nothing */
    if (found == 2)
        chain.first = records.count + 1; /* this node's record, noted below, is settled */
    if (stage == STAGE_NODE_ID)
        return 0;

    Record record = {id, node, -1, -1, 0, -1, 0};
    PyObject *module = NULL; /* borrowed: the frame running its method holds it */
    Frame module_frame = {NULL};
    int failed = 0;
    Frame frame = frame_first();
    /* Outward until both the user's frame and the innermost module's are found. */
    for (; frame_valid(&frame) && (record.user < 0 || module == NULL); frame_next(&frame)) {
        int32_t index;
        const CodeEntry *entry = code_entry(frame_code(&frame), &index);
        if (entry == NULL) {
            failed = 1;
            break;
        }
        if (module == NULL) {
            module = module_of(&frame, entry);
            if (module != NULL)
                module_frame = frame_copy(&frame);
            else if (PyErr_Occurred()) {
                failed = 1;
                break;
            }
        }
        if (record.user < 0) {
            if (entry->kind == KIND_USER) {
                record.user = index;
                record.user_at = frame_offset(&frame);
            }
            else if (entry->kind == KIND_GENERATED && record.generated < 0) {
                record.generated = index;
                record.generated_at = frame_offset(&frame);
            }
        }
    }
    frame_release(&frame);
    if (stage == STAGE_WALK) {
        frame_release(&module_frame);
        return failed ? -1 : 0;
    }
    if (!failed && module != NULL) {
        record.module = path_of(module, &module_frame);
        failed = record.module < 0;
    }
    frame_release(&module_frame);
    if (!failed) {
        Record *slot = array_add(&records, sizeof(Record));
        failed = slot == NULL;
        if (!failed)
            *slot = record;
    }
    if (chain.first > records.count)
        chain.first = records.count; /* this node's record was not noted */
    return failed ? -1 : 0;
}

/* The line of the instruction at byte `offset` of a code object, as a new int. */
static PyObject *
line_at(PyCodeObject *code, int offset)
{
    return PyLong_FromLong(PyCode_Addr2Line(code, offset));
}

/* Append the first `settled` of `recs` to `to`, as the tuples attribution.py's labeller makes,
 * and drop them from `recs`; `code_arr` and `path_arr` are what the records index. 0, or -1
 * with an exception set (the labels not appended stay in `recs`); `handed`: how many went. */
static int
drain_into(Array *recs, const Array *code_arr, const Array *path_arr, PyObject *to,
           Py_ssize_t settled, Py_ssize_t *handed)
{
    Py_ssize_t done = 0;
    int failed = 0;
    const Record *all = (const Record *)recs->items;
    const CodeEntry *code = (const CodeEntry *)code_arr->items;
    PyObject *const *path = (PyObject *const *)path_arr->items;
    for (; done < settled && !failed; done++) {
        const Record *r = all + done;
        if (r->id == 0)
            continue; /* CUPTI had no id for its node, asked again */
        PyObject *entry = PyTuple_New(7);
        if (entry == NULL) {
            failed = 1;
            continue; /* done counts it, as below, and is stepped back after the loop */
        }
        PyObject *items[7] = {
            PyLong_FromUnsignedLongLong(r->id),
            r->module >= 0 ? Py_NewRef(path[r->module]) : Py_NewRef(Py_None),
            Py_NewRef(Py_None),
            r->user >= 0 ? Py_NewRef((PyObject *)code[r->user].code) : Py_NewRef(Py_None),
            r->user >= 0 ? line_at(code[r->user].code, r->user_at) : Py_NewRef(Py_None),
            r->generated >= 0 ? Py_NewRef(code[r->generated].code->co_filename)
                              : Py_NewRef(Py_None),
            r->generated >= 0 ? line_at(code[r->generated].code, r->generated_at)
                              : Py_NewRef(Py_None),
        };
        for (int i = 0; i < 7; i++) {
            failed = failed || items[i] == NULL;
            PyTuple_SET_ITEM(entry, i, items[i]); /* steals; NULL items are left so */
        }
        /* Numbers, strings and a code object: no cycle for the collector to find. */
        if (!failed)
            PyObject_GC_UnTrack(entry);
        failed = failed || PyList_Append(to, entry) < 0;
        Py_DECREF(entry);
    }
    if (failed)
        done--; /* the one that failed stays noted */
    memmove(recs->items, recs->items + (size_t)done * sizeof(Record),
            (size_t)(recs->count - done) * sizeof(Record));
    recs->count -= done;
    *handed = done;
    return failed ? -1 : 0;
}

/* Append the labels noted so far to the sink; 0, or -1 with an exception set (the labels not
 * appended stay noted). */
static int
drain_records(void)
{
    /* Guessed ids not settled yet stay noted (see `chain`). */
    Py_ssize_t settled =
        chain.graph != NULL && chain.first < records.count ? chain.first : records.count;
    Py_ssize_t done = 0;
    int result = drain_into(&records, &codes, &paths, sink, settled, &done);
    chain.first = chain.first > done ? chain.first - done : 0;
    return result;
}

/* The labels of labelling that has stopped, as noted, until drain() hands them over. Making
 * their tuples at stop(), as a capture ends, held the program 3.3 to 4.8 ms per 10,411 nodes
 * on the H200 (docs/RECORD.md); the recorder's worker drains them while the program rests.
 * Each keeps the arrays its records index and the references that keep those alive. */
typedef struct Stash {
    Array records, codes, paths;
    PyObject *held; /* strong references, as `held` */
    PyObject *sink;
    struct Stash *next;
} Stash;
static Stash *stashed; /* oldest first */

static void
stash_free(Stash *st)
{
    array_free(&st->records);
    array_free(&st->codes);
    array_free(&st->paths);
    Py_XDECREF(st->held);
    Py_XDECREF(st->sink);
    PyMem_Free(st);
}

/* Move the settled labels noted, and what they index, to the stash; the globals are left
 * empty. 0, or -1 (no memory for the stash: nothing moved). */
static int
stash_records(void)
{
    Stash *st = PyMem_Calloc(1, sizeof(Stash));
    if (st == NULL)
        return -1;
    st->records = records;
    st->codes = codes;
    st->paths = paths;
    st->held = held; /* the reference moves with it */
    st->sink = Py_NewRef(sink);
    records = (Array){0};
    codes = (Array){0};
    paths = (Array){0};
    held = NULL;
    Stash **tail = &stashed;
    while (*tail != NULL)
        tail = &(*tail)->next;
    *tail = st;
    return 0;
}

/* Hand every stash to its sink; 0, or -1 with an exception set (what is left stays). */
static int
drain_stashed(void)
{
    /* Taken off first: a tuple's allocation may run the collector, whose finalizers could
     * drain again, or stop a labelling and stash more meanwhile. */
    Stash *st = stashed;
    stashed = NULL;
    while (st != NULL) {
        Py_ssize_t done = 0;
        if (drain_into(&st->records, &st->codes, &st->paths, st->sink, st->records.count,
                       &done) < 0) {
            Stash *last = st;
            while (last->next != NULL)
                last = last->next;
            last->next = stashed; /* before whatever was stashed meanwhile */
            stashed = st;
            return -1;
        }
        Stash *next = st->next;
        stash_free(st);
        st = next;
    }
    return 0;
}

/* Tell on_error of the exception set, and clear it: nothing may reach CUPTI or the program. */
static void
report(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *value = PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
#endif
    if (on_error != NULL && value != NULL) {
        PyObject *ignored = PyObject_CallOneArg(on_error, value);
        Py_XDECREF(ignored);
        PyErr_Clear();
    }
    Py_XDECREF(value);
}

static void
callback(void *userdata, int domain, uint32_t cbid, const void *data)
{
    if (labelling && domain == node_domain && cbid == node_cbid && data != NULL) {
        if (!Py_IsInitialized() || is_finalizing())
            return;
        PyGILState_STATE gil = PyGILState_Ensure();
        int handled = labelling; /* stop() may have run while this thread waited */
        if (handled && label(data) < 0)
            report();
        PyGILState_Release(gil);
        if (handled)
            return;
    }
    if (!capturing && domain >= 0 && domain < GATED_DOMAINS && cbid < GATED_IDS &&
        gated[domain][cbid])
        return;
    if (forward != NULL)
        forward(userdata, domain, cbid, data);
}

static PyObject *
gate(PyObject *self, PyObject *args)
{
    int domain, on = 1;
    unsigned int cbid;
    if (!PyArg_ParseTuple(args, "iI|p", &domain, &cbid, &on))
        return NULL;
    if (domain < 0 || domain >= GATED_DOMAINS || cbid >= GATED_IDS) {
        PyErr_Format(PyExc_ValueError, "gate: callback %u of domain %d is out of range", cbid,
                     domain);
        return NULL;
    }
    gated[domain][cbid] = (unsigned char)on;
    Py_RETURN_NONE;
}

static PyObject *
set_capturing(PyObject *self, PyObject *args)
{
    int count, keep = 1;
    unsigned long long ended = 0;
    if (!PyArg_ParseTuple(args, "i|pK", &count, &keep, &ended))
        return NULL;
    /* The graph a capture ended with lives: a chain on another graph is dropped unchecked. */
    settle(keep && (ended == 0 || (uintptr_t)chain.graph == (uintptr_t)ended));
    /* Told by the thread that begins a capture; a capture left running when another ends is
     * on a thread not known here. */
    capture_thread = count == 1 && capturing == 0 ? PyThread_get_thread_ident() : 0;
    capture_graph = NULL;
    capturing = count;
    Py_RETURN_NONE;
}

static PyObject *
id_counts(PyObject *self, PyObject *unused)
{
    return Py_BuildValue("KKK", ids_asked, ids_guessed, ids_missed);
}

static PyObject *
set_guess_ids(PyObject *self, PyObject *args)
{
    int on;
    if (!PyArg_ParseTuple(args, "p", &on))
        return NULL;
    settle(1);
    guess_ids = on;
    Py_RETURN_NONE;
}

static PyObject *
install(PyObject *self, PyObject *args)
{
    unsigned long long trampoline, node_id;
    int domain;
    unsigned int cbid;
    if (!PyArg_ParseTuple(args, "KKiI", &trampoline, &node_id, &domain, &cbid))
        return NULL;
    if (trampoline == 0 || node_id == 0) {
        PyErr_SetString(PyExc_ValueError, "install: a null function address");
        return NULL;
    }
    forward = (callback_fn)(uintptr_t)trampoline;
    get_node_id = (node_id_fn)(uintptr_t)node_id;
    node_domain = domain;
    node_cbid = cbid;
    return PyLong_FromVoidPtr((void *)callback);
}

/* Hand the labels noted to the sink, then drop every reference and cache: a failure to
 * hand them over is told to on_error. */
static void
clear(void)
{
    labelling = 0;
    settle(0); /* labels of a capture still running: its graph may be freed at any time */
    if (sink != NULL && records.count > 0 && stash_records() < 0 && drain_records() < 0)
        report(); /* no memory to stash them: drained now, as far as can be */
    array_free(&records);
    table_free(&code_table);
    table_free(&type_table);
    table_free(&module_table);
    array_free(&codes);
    array_free(&paths);
    Py_CLEAR(held);
    Py_CLEAR(sink);
    Py_CLEAR(names);
    Py_CLEAR(module_type);
    Py_CLEAR(kinds);
    Py_CLEAR(classify);
    Py_CLEAR(learn);
    Py_CLEAR(on_error);
}

static PyObject *
start(PyObject *self, PyObject *args)
{
    PyObject *s, *n, *t, *k, *c, *l, *e;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOO", &PyList_Type, &s, &PyDict_Type, &n, &PyType_Type,
                          &t, &PyDict_Type, &k, &c, &l, &e))
        return NULL;
    if (forward == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "start: install() has not run");
        return NULL;
    }
    clear();
    held = PyList_New(0);
    if (held == NULL)
        return NULL;
    sink = Py_NewRef(s);
    names = Py_NewRef(n);
    module_type = Py_NewRef(t);
    kinds = Py_NewRef(k);
    classify = Py_NewRef(c);
    learn = Py_NewRef(l);
    on_error = Py_NewRef(e);
    labelling = 1;
    Py_RETURN_NONE;
}

static PyObject *
stop(PyObject *self, PyObject *unused)
{
    clear();
    Py_RETURN_NONE;
}

static PyObject *
drain(PyObject *self, PyObject *unused)
{
    if (drain_stashed() < 0)
        return NULL;
    if (sink != NULL && drain_records() < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
active(PyObject *self, PyObject *unused)
{
    return PyBool_FromLong(labelling);
}

static PyObject *
use_interpreter_frames(PyObject *self, PyObject *args)
{
    int on;
    if (!PyArg_ParseTuple(args, "p", &on))
        return NULL;
    if (labelling) {
        PyErr_SetString(PyExc_RuntimeError, "use_interpreter_frames: the labeller is running");
        return NULL;
    }
    raw_walk = on && INTERPRETER_FRAMES;
    return PyBool_FromLong(raw_walk);
}

static PyObject *
probe_stage(PyObject *self, PyObject *args)
{
    int at;
    if (!PyArg_ParseTuple(args, "i", &at))
        return NULL;
    if (at < STAGE_ALL || at > STAGE_WALK) {
        PyErr_Format(PyExc_ValueError, "probe_stage: %d is not a stage (0 to 3)", at);
        return NULL;
    }
    stage = at;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS,
     "install(trampoline, get_node_id, domain, cbid) -> the address of the CUPTI callback to "
     "subscribe: it forwards every callback to trampoline, but GRAPHNODE_CREATED (domain, cbid) "
     "while labelling"},
    {"start", start, METH_VARARGS,
     "start(sink, names, module_type, kinds, classify, learn, on_error): label each node "
     "created from now on"},
    {"stop", stop, METH_NOARGS,
     "stop(): keep the labels noted for drain(), forward GRAPHNODE_CREATED again, and drop "
     "the other references"},
    {"drain", drain, METH_NOARGS,
     "drain(): append the labels noted since the last drain to their sinks, as tuples: those "
     "of labelling stopped since (each to the sink it was started with), then the current"},
    {"active", active, METH_NOARGS, "active() -> whether nodes are being labelled"},
    {"use_interpreter_frames", use_interpreter_frames, METH_VARARGS,
     "use_interpreter_frames(on) -> whether the walk now reads the interpreter's frames (3.11 "
     "to 3.13) rather than frame objects through the public API; for tests and measures"},
    {"probe_stage", probe_stage, METH_VARARGS,
     "probe_stage(n): end each label after taking the GIL (1), after reading the node's id (2), "
     "after the walk (3), or not before it is noted (0, the default); for probes"},
    {"gate", gate, METH_VARARGS,
     "gate(domain, cbid, on=True): pass this callback on only while a stream capture runs "
     "(on), or always (off)"},
    {"capturing", set_capturing, METH_VARARGS,
     "capturing(count, ended_well=True, graph=0): how many stream captures run now (gated "
     "callbacks pass while > 0), told by the thread that begins or ends one; the ids guessed "
     "in the capture that ended are settled, or dropped if it failed or its graph is not "
     "`graph`, the one it ended with (the others may be gone)"},
    {"id_counts", id_counts, METH_NOARGS,
     "id_counts() -> (node ids asked of CUPTI, guessed, chains whose guesses missed)"},
    {"guess_ids", set_guess_ids, METH_VARARGS,
     "guess_ids(on): guess node ids within a capture (the default), or ask CUPTI for each"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_labeller",
    "The CUPTI callback that labels each node a capture creates (see attribution.py).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__labeller(void)
{
    s_self = PyUnicode_InternFromString("self");
    return s_self == NULL ? NULL : PyModule_Create(&module);
}
