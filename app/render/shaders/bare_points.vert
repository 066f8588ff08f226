#version 330 core
// Bare points, vertex stage: the cheapest draw of the same particles (no colour, no sprite),
// the baseline `orrery bench render` compares the full renderer against.

uniform mat4 view_projection;
uniform float point_size;

in vec3 position;

void main() {
    gl_Position = view_projection * vec4(position, 1.0);
    gl_PointSize = point_size;
}
