// Angular's packages are partially compiled and the generated services carry
// decorators, so in Node (no Angular CLI build) they are compiled just in time:
// load the compiler, and the metadata API that holds their constructor
// parameter types, before any Angular or client module is evaluated.
import '@angular/compiler';
import 'reflect-metadata';
