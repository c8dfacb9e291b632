/* graphscope.capture._modulewalk: where a module tree's parameters and buffers are now.
 *
 * At each instantiation the recorder reads where the model's parameters and buffers lie, to
 * name the pointers in the graph's kernel arguments (pointers.py). In Python, through
 * named_parameters() and named_buffers(), that read cost 2.3 us per node of a 10,411-node
 * capture on the H100 (benchmarks/probe_labels.py), most of it per tensor: a generator step, a
 * name joined, three attribute reads. Here the same walk runs in C over the tree's own
 * dicts (_modules, _parameters, _buffers), in named_modules() order, each module and tensor
 * once, with torch.compile's `_orig_mod` levels left out of the names (as module_path does).
 *
 * Read anew at every call: weights reloaded between two captures move, and the names must be
 * those of the memory the graph was made with. pointers.tree_spans is the Python twin, used
 * where this extension was not built; tests/test_modulewalk.py holds the two to one answer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *s_modules, *s_parameters, *s_buffers, *s_is_cuda, *s_data_ptr, *s_nbytes,
    *s_orig_mod, *s_dot;

typedef struct {
    PyObject *spans;   /* list of (first byte, one past the last, path) */
    PyObject *modules; /* set: id() of each module walked */
    PyObject *tensors; /* set: id() of each tensor seen */
    int cuda_only;
} Walk;

/* A dict attribute of a module (_modules, _parameters, _buffers); new reference or NULL. */
static PyObject *
dict_of(PyObject *module, PyObject *attribute)
{
    /* The instance's own attribute, past nn.Module's __getattr__ hook, whose call through
     * the type's slot cost more than the rest of the walk; the hook's path if that fails. */
    PyObject *d = PyObject_GenericGetAttr(module, attribute);
    if (d == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        d = PyObject_GetAttr(module, attribute);
    }
    if (d != NULL && !PyDict_Check(d)) {
        PyErr_Format(PyExc_TypeError, "%R of a %.100s is a %.100s, not a dict", attribute,
                     Py_TYPE(module)->tp_name, Py_TYPE(d)->tp_name);
        Py_CLEAR(d);
    }
    return d;
}

/* "path.name", or "name" at the tree's root; new reference or NULL. */
static PyObject *
joined(PyObject *path, PyObject *name)
{
    if (PyUnicode_GET_LENGTH(path) == 0)
        return Py_NewRef(name);
    PyObject *dotted = PyUnicode_Concat(path, s_dot);
    PyObject *out = dotted == NULL ? NULL : PyUnicode_Concat(dotted, name);
    Py_XDECREF(dotted);
    return out;
}

/* 1 if the set gained id(obj), 0 if it held it already, -1 on error. */
static int
first_time(PyObject *seen, PyObject *obj)
{
    PyObject *key = PyLong_FromVoidPtr(obj);
    if (key == NULL)
        return -1;
    int held = PySet_Contains(seen, key);
    if (held == 0 && PySet_Add(seen, key) < 0)
        held = -1;
    Py_DECREF(key);
    return held < 0 ? -1 : !held;
}

static int
add_span(Walk *w, PyObject *path, PyObject *name, PyObject *tensor)
{
    int fresh = first_time(w->tensors, tensor);
    if (fresh <= 0)
        return fresh;
    if (w->cuda_only) {
        PyObject *on_gpu = PyObject_GetAttr(tensor, s_is_cuda);
        if (on_gpu == NULL)
            return -1;
        int yes = PyObject_IsTrue(on_gpu);
        Py_DECREF(on_gpu);
        if (yes <= 0)
            return yes;
    }
    PyObject *address = PyObject_CallMethodNoArgs(tensor, s_data_ptr);
    if (address == NULL)
        return -1;
    PyObject *size = PyObject_GetAttr(tensor, s_nbytes);
    if (size == NULL) {
        Py_DECREF(address);
        return -1;
    }
    PyObject *end = PyNumber_Add(address, size);
    Py_DECREF(size);
    PyObject *full = end == NULL ? NULL : joined(path, name);
    PyObject *span = full == NULL ? NULL : PyTuple_Pack(3, address, end, full);
    Py_DECREF(address);
    Py_XDECREF(end);
    Py_XDECREF(full);
    if (span == NULL)
        return -1;
    PyObject_GC_UnTrack(span); /* numbers and a string: no cycle to find, nothing to scan */
    int failed = PyList_Append(w->spans, span);
    Py_DECREF(span);
    return failed;
}

/* The tensors of one of a module's dicts; 0 or -1. */
static int
add_dict(Walk *w, PyObject *module, PyObject *attribute, PyObject *path)
{
    PyObject *d = dict_of(module, attribute);
    if (d == NULL)
        return -1;
    /* PyDict_Next, not a list of the items: the lists and tuples PyDict_Items made were
     * half of the walk's allocations, and each allocation brings the collector nearer. A
     * dict changed meanwhile (data_ptr() is Python's) is iterated safely, perhaps not whole. */
    Py_ssize_t pos = 0;
    PyObject *name, *tensor;
    int failed = 0;
    while (!failed && PyDict_Next(d, &pos, &name, &tensor)) {
        if (tensor == Py_None)
            continue;
        Py_INCREF(name);
        Py_INCREF(tensor);
        failed = add_span(w, path, name, tensor) < 0;
        Py_DECREF(name);
        Py_DECREF(tensor);
    }
    Py_DECREF(d);
    return failed ? -1 : 0;
}

static int
walk_module(Walk *w, PyObject *module, PyObject *path)
{
    int fresh = first_time(w->modules, module);
    if (fresh <= 0)
        return fresh;
    if (Py_EnterRecursiveCall(" walking a module tree"))
        return -1;
    int failed = add_dict(w, module, s_parameters, path) < 0 ||
                 add_dict(w, module, s_buffers, path) < 0;
    PyObject *children = failed ? NULL : dict_of(module, s_modules);
    failed = failed || children == NULL;
    Py_ssize_t pos = 0;
    PyObject *name, *child;
    while (!failed && PyDict_Next(children, &pos, &name, &child)) {
        if (child == Py_None)
            continue;
        Py_INCREF(child);
        int wrapper = PyUnicode_Check(name) && PyUnicode_Compare(name, s_orig_mod) == 0;
        PyObject *inner = wrapper ? Py_NewRef(path) : joined(path, name);
        failed = inner == NULL || walk_module(w, child, inner) < 0;
        Py_XDECREF(inner);
        Py_DECREF(child);
    }
    Py_XDECREF(children);
    Py_LeaveRecursiveCall();
    return failed ? -1 : 0;
}

static PyObject *
walk(PyObject *self, PyObject *args)
{
    PyObject *root;
    int cuda_only = 1;
    if (!PyArg_ParseTuple(args, "O|p", &root, &cuda_only))
        return NULL;
    Walk w = {PyList_New(0), PySet_New(NULL), PySet_New(NULL), cuda_only};
    PyObject *path = PyUnicode_FromString("");
    PyObject *out = NULL;
    if (w.spans != NULL && w.modules != NULL && w.tensors != NULL && path != NULL &&
        walk_module(&w, root, path) == 0)
        out = PyTuple_Pack(2, w.spans, w.modules);
    Py_XDECREF(path);
    Py_XDECREF(w.spans);
    Py_XDECREF(w.modules);
    Py_XDECREF(w.tensors);
    return out;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(root, cuda_only=True) -> (spans, module ids): (first byte, one past the last, path) "
     "of each parameter and buffer of the tree (on the GPU only, unless told), each once, "
     "and the id() of every module in it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_modulewalk",
    "Where a module tree's parameters and buffers are now (see pointers.tree_spans).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__modulewalk(void)
{
    s_modules = PyUnicode_InternFromString("_modules");
    s_parameters = PyUnicode_InternFromString("_parameters");
    s_buffers = PyUnicode_InternFromString("_buffers");
    s_is_cuda = PyUnicode_InternFromString("is_cuda");
    s_data_ptr = PyUnicode_InternFromString("data_ptr");
    s_nbytes = PyUnicode_InternFromString("nbytes");
    s_orig_mod = PyUnicode_InternFromString("_orig_mod");
    s_dot = PyUnicode_InternFromString(".");
    if (!s_modules || !s_parameters || !s_buffers || !s_is_cuda || !s_data_ptr || !s_nbytes ||
        !s_orig_mod || !s_dot)
        return NULL;
    return PyModule_Create(&module);
}
