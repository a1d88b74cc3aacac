// gptc: the compiler. All of it lives in compiler/driver.
#include "compiler/driver/GptcMain.h"

int main(int argc, char **argv) { return gptc::gptcMain(argc, argv); }
