#include "kernels/flash_attention.hpp"
