/* The hot path of a span wrapped by `--span` (stagebench._wrap.timed), in
 * C: what _spans.begin and _spans.end do for a plain function's call, on
 * the same per-thread tallies (Python lists), so everything else (writing,
 * forks, threads) stays in Python. Optional: where this does not build,
 * _wrap does the same steps in Python, slower.
 *
 * A tally is the list _spans.tally makes and a thread state is
 * _spans.thread's list, both indexed by the names _layout.py gives (the
 * SB_ #defines below, which a test holds to _layout.py's names and
 * values). The GIL makes each call's steps atomic against the program's
 * other threads; the functions called back into
 * Python (a thread's first span, an out-of-order end, a write) are
 * _spans' own. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#ifdef Py_GIL_DISABLED
/* Without the GIL these steps would race the program's threads: such a
 * Python keeps the Python path (the build fails, and is optional). */
#error "stagebench._fast needs the GIL"
#endif
#include <limits.h>
#include <time.h>

/* The tally layout, as _layout.py names it (each name with SB_ before it,
 * clear of the C library's MIN and MAX): bumped with any change to it. */
#define SB_LAYOUT 1
/* A span name's tally. */
#define SB_CALLS 0
#define SB_SUM 1
#define SB_SELF 2
#define SB_MIN 3
#define SB_MAX 4
#define SB_FIRST_NS 5
#define SB_FIRST_AT 6
#define SB_HIST 7
#define SB_BESIDE 8
#define SB_OPEN 9
#define SB_CHILDREN 10
#define SB_NAME 11
#define SB_PARENT 12
#define SB_START 13
#define SB_TALLY_SIZE 14
/* A thread's state. */
#define SB_T_INNER 0
#define SB_T_ID 1
#define SB_T_TALLIES 2
#define SB_T_MAIN 3
#define SB_T_TOP_NS 4
#define SB_T_TOP_FIRST 5
#define SB_T_TOP_LAST 6
#define SB_T_FLUSH_AT 7
#define SB_STATE_SIZE 8

static PyObject *local_, *t_str, *new_, *tally_, *end_, *flush_, *slices_, *unsliced_;
static Py_ssize_t max_slices;

static inline long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int is_state(PyObject *t) { return PyList_CheckExact(t) && PyList_GET_SIZE(t) == SB_STATE_SIZE; }

/* This thread's state, a new reference (local.t, or made by _spans.thread). */
static PyObject *thread_state(void) {
    PyObject *t = PyObject_GetAttr(local_, t_str);
    if (t == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return NULL;
        PyErr_Clear();
        t = PyObject_CallNoArgs(new_);
        if (t == NULL) return NULL;
    }
    if (!is_state(t)) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_TypeError, "not a stagebench thread state");
        return NULL;
    }
    return t;
}

/* list[i] as a C integer; one above LLONG_MAX (a min's start, 2^63) reads
 * as LLONG_MAX, above any duration. */
static inline int get(PyObject *list, Py_ssize_t i, long long *out) {
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(PyList_GET_ITEM(list, i), &overflow);
    if (overflow > 0) *out = LLONG_MAX;
    if (overflow < 0) {
        PyErr_SetString(PyExc_OverflowError, "a tally below -2^63");
        return -1;
    }
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static inline int set(PyObject *list, Py_ssize_t i, long long v) {
    PyObject *n = PyLong_FromLongLong(v);
    if (n == NULL) return -1;
    PyObject *old = PyList_GET_ITEM(list, i);
    PyList_SET_ITEM(list, i, n);
    Py_DECREF(old);
    return 0;
}

/* list[i] += d, exactly as Python's unbounded ints would (a sum past
 * 2^63 nanoseconds, 292 years, is added as Python objects). */
static inline int add(PyObject *list, Py_ssize_t i, long long d) {
    long long v, r;
    if (get(list, i, &v) < 0) return -1;
    if (v == LLONG_MAX || __builtin_add_overflow(v, d, &r)) {
        PyObject *dd = PyLong_FromLongLong(d);
        if (dd == NULL) return -1;
        PyObject *sum = PyNumber_Add(PyList_GET_ITEM(list, i), dd);
        Py_DECREF(dd);
        if (sum == NULL) return -1;
        PyObject *old = PyList_GET_ITEM(list, i);
        PyList_SET_ITEM(list, i, sum);
        Py_DECREF(old);
        return 0;
    }
    return set(list, i, r);
}

static inline void put(PyObject *list, Py_ssize_t i, PyObject *v) {
    Py_INCREF(v);
    PyObject *old = PyList_GET_ITEM(list, i);
    PyList_SET_ITEM(list, i, v);
    Py_DECREF(old);
}

static int is_tally(PyObject *s) { return PyList_CheckExact(s) && PyList_GET_SIZE(s) == SB_TALLY_SIZE; }

/* enter(name): opens a span called name on this thread; its tally, or
 * None when one of that name is open here already (recursion: not timed
 * again). */
static PyObject *enter(PyObject *self, PyObject *name) {
    PyObject *t = thread_state();
    if (t == NULL) return NULL;
    PyObject *s = PyDict_GetItemWithError(PyList_GET_ITEM(t, SB_T_TALLIES), name);
    if (s == NULL) {
        if (PyErr_Occurred()) { Py_DECREF(t); return NULL; }
        s = PyObject_CallFunctionObjArgs(tally_, t, name, NULL);
        if (s == NULL) { Py_DECREF(t); return NULL; }
        Py_DECREF(s); /* the dict holds it */
    }
    if (!is_tally(s)) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_TypeError, "not a stagebench tally");
        return NULL;
    }
    if (PyObject_IsTrue(PyList_GET_ITEM(s, SB_OPEN))) {
        Py_DECREF(t);
        Py_RETURN_NONE;
    }
    put(s, SB_OPEN, Py_True);
    if (set(s, SB_CHILDREN, 0) < 0) { Py_DECREF(t); return NULL; }
    put(s, SB_PARENT, PyList_GET_ITEM(t, SB_T_INNER));
    put(t, SB_T_INNER, s);
    Py_DECREF(t);
    if (set(s, SB_START, now_ns()) < 0) return NULL;
    Py_INCREF(s);
    return s;
}

/* leave(s): ends the span enter gave, as _spans.end does. */
static PyObject *leave(PyObject *self, PyObject *s) {
    long long end = now_ns(), start, ns, children, v;
    if (!is_tally(s)) {
        PyErr_SetString(PyExc_TypeError, "not a stagebench tally");
        return NULL;
    }
    if (get(s, SB_START, &start) < 0) return NULL;
    ns = end - start;
    PyObject *t = thread_state();
    if (t == NULL) return NULL;
    if (PyList_GET_ITEM(t, SB_T_INNER) != s) {
        /* Closed out of order: _spans.end's own steps. */
        PyObject *r = PyObject_CallFunction(end_, "OOLL", t, s, start, ns);
        Py_DECREF(t);
        return r;
    }
    PyObject *p = PyList_GET_ITEM(s, SB_PARENT);
    put(s, SB_OPEN, Py_False);
    put(t, SB_T_INNER, p);
    if (p != Py_None) {
        if (add(p, SB_CHILDREN, ns) < 0) goto fail;
    } else if (PyObject_IsTrue(PyList_GET_ITEM(t, SB_T_MAIN))) {
        if (add(t, SB_T_TOP_NS, ns) < 0) goto fail;
        if (PyList_GET_ITEM(t, SB_T_TOP_FIRST) == Py_None && set(t, SB_T_TOP_FIRST, start) < 0) goto fail;
        if (set(t, SB_T_TOP_LAST, start + ns) < 0) goto fail;
    }
    if (get(s, SB_CHILDREN, &children) < 0) goto fail;
    if (add(s, SB_CALLS, 1) < 0 || add(s, SB_SUM, ns) < 0 || add(s, SB_SELF, ns - children) < 0) goto fail;
    if (get(s, SB_MAX, &v) < 0) goto fail;
    if (ns > v && set(s, SB_MAX, ns) < 0) goto fail;
    if (get(s, SB_MIN, &v) < 0) goto fail;
    if (ns < v && set(s, SB_MIN, ns) < 0) goto fail;
    PyObject *hist = PyList_GET_ITEM(s, SB_HIST);
    Py_ssize_t b;
    if (ns < 128) {
        b = (Py_ssize_t)(ns < 0 ? 0 : ns);
    } else {
        int e = 64 - __builtin_clzll((unsigned long long)ns);
        b = ((Py_ssize_t)e << 6) + (Py_ssize_t)(ns >> (e - 7)) - 64;
    }
    if (!PyList_CheckExact(hist) || b >= PyList_GET_SIZE(hist)) {
        PyErr_SetString(PyExc_TypeError, "not a stagebench histogram");
        goto fail;
    }
    if (add(hist, b, 1) < 0) goto fail;
    if (get(s, SB_CALLS, &v) < 0) goto fail;
    if (v == 1 && (set(s, SB_FIRST_NS, ns) < 0 || set(s, SB_FIRST_AT, start) < 0)) goto fail;
    long long unsliced;
    if (get(unsliced_, 0, &unsliced) < 0) goto fail;
    if (unsliced || PyList_GET_SIZE(slices_) >= max_slices) {
        if (set(unsliced_, 0, unsliced + 1) < 0) goto fail;
    } else {
        int beside = !PyObject_IsTrue(PyList_GET_ITEM(t, SB_T_MAIN));
        PyObject *slice = Py_BuildValue("(OLLi)", PyList_GET_ITEM(s, SB_NAME), start, ns, beside);
        if (slice == NULL) goto fail;
        int r = PyList_Append(slices_, slice);
        Py_DECREF(slice);
        if (r < 0) goto fail;
    }
    if (get(t, SB_T_FLUSH_AT, &v) < 0) goto fail;
    if (start >= v) {
        PyObject *r = PyObject_CallOneArg(flush_, t);
        if (r == NULL) goto fail;
        Py_DECREF(r);
    }
    Py_DECREF(t);
    Py_RETURN_NONE;
fail:
    Py_DECREF(t);
    return NULL;
}

/* setup(local, thread, tally, end, flush, slices, unsliced, max_slices):
 * _spans' objects, once at its import. */
static PyObject *setup(PyObject *self, PyObject *args) {
    PyObject *l, *n, *ta, *e, *f, *sl, *un;
    Py_ssize_t m;
    if (!PyArg_ParseTuple(args, "OOOOOO!O!n", &l, &n, &ta, &e, &f, &PyList_Type, &sl,
                          &PyList_Type, &un, &m))
        return NULL;
    if (PyList_GET_SIZE(un) != 1) {
        PyErr_SetString(PyExc_ValueError, "unsliced must hold one count");
        return NULL;
    }
    PyObject *objs[] = {l, n, ta, e, f, sl, un};
    PyObject **slots[] = {&local_, &new_, &tally_, &end_, &flush_, &slices_, &unsliced_};
    for (int i = 0; i < 7; i++) {
        Py_INCREF(objs[i]);
        Py_XSETREF(*slots[i], objs[i]);
    }
    max_slices = m;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(local, thread, tally, end, flush, slices, unsliced, max_slices)"},
    {"enter", enter, METH_O, "enter(name) -> tally or None"},
    {"leave", leave, METH_O, "leave(tally)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fast", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fast(void) {
    t_str = PyUnicode_InternFromString("t");
    if (t_str == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    /* The tally layout these steps work on (_layout.LAYOUT). */
    if (m != NULL && PyModule_AddIntConstant(m, "LAYOUT", SB_LAYOUT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
