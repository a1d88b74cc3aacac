/* A shared library that is not the Gloo communicator library: the loader
   must say so instead of crashing. */
int gptrt_test_not_a_plugin(void) { return 0; }
